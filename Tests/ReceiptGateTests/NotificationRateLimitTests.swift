import AmazonAppstore
import Foundation
import GooglePlay
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The store notification routes take anyone's POST, so each caller address has a budget per
/// route (`notifications.<store>.address`): past it the answer is a 429 in the native error shape,
/// before anything is proven; behind a trusted proxy the caller is the forwarded address.
@Suite struct NotificationRateLimits {
    static let routes = [
        ("app_store", "/v1/notifications/app-store"), ("google_play", "/v1/notifications/google-play"),
        ("amazon_appstore", "/v1/notifications/amazon-appstore"),
    ]

    static func post(_ path: String, port: Int, from caller: String) async throws -> RawHTTP.Response {
        try await RawHTTP.request(
            port: port, method: "POST", path: path,
            headers: ["Content-Type": "application/json", "X-Forwarded-For": caller],
            body: Data("{}".utf8))
    }

    @Test func everyNotificationRouteAnswers429PastACallersBudget() async throws {
        let limits = Dictionary(
            uniqueKeysWithValues: Self.routes.map { store, _ in
                (
                    "notifications.\(store).address",
                    ServiceConfiguration.RateLimitOverride(limit: 2, window: VerifyHarness.rateLimitWindow)
                )
            })
        let proxy = try #require(TrustedProxy("127.0.0.1"))
        let google = GooglePlayProvider(configuration: GooglePlayConfiguration())
        let amazon = try AmazonAppstoreProvider(configuration: AmazonAppstoreConfiguration())
        let harness = try await VerifyHarness.start(
            otherStores: [google.registration, amazon.registration], rateLimits: limits,
            configure: { $0.trustedProxies = [proxy] })
        defer { harness.stop() }
        let port = harness.service.port
        for (_, path) in Self.routes {
            for _ in 0..<2 {
                let refused = try await Self.post(path, port: port, from: "198.51.100.1")
                #expect(
                    (400..<500).contains(refused.status) && refused.status != 429,
                    "\(path): \(refused.status) \(refused.text)")
            }
            let limited = try await Self.post(path, port: port, from: "198.51.100.1")
            #expect(limited.status == 429, "\(path): \(limited.text)")
            #expect(try limited.json()["error"] as? String == "RATE_LIMITED", "\(path): \(limited.text)")
            #expect(
                VerifyHarness.isTheWindowsEnd(limited.headers["retry-after"].flatMap(Int.init)),
                "\(path): \(limited.headers)")
            // Another caller behind the same proxy has a budget of its own.
            let other = try await Self.post(path, port: port, from: "198.51.100.2")
            #expect(other.status != 429, "\(path): \(other.text)")
        }
    }
}
