import Foundation
import TestSupport
import Testing

/// A store misspelt in a read path is the caller's mistake, answered as one: 400 naming the stores
/// served, not a 404 that reads as "no such purchase".
@Suite struct UnknownStoreInPath {
    @Test func aMisspeltStoreIsRefusedNamingTheStoresServed() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let reads = [
            "/v1/transactions/app_stor/2000000000000001",
            "/v1/subscriptions/appstore/2000000000000001",
        ]
        for path in reads {
            let answer = try await harness.client.get(path)
            #expect(answer.status == 400, "\(path): \(answer.status) \(answer.text)")
            let body = try JSONSerialization.jsonObject(with: answer.body) as? [String: Any]
            #expect(body?["error"] as? String == "INVALID_FIELD")
            let message = body?["message"] as? String ?? ""
            #expect(message.hasPrefix("UNKNOWN_STORE: ") && message.contains("app_store"), "\(message)")
        }
        let report = try await harness.client.post(
            "/v1/transactions/google_pla/GPA.1/consumption",
            body: Data(#"{"delivered": true, "consumed_percent": 10}"#.utf8), version: "2")
        #expect(report.status == 400, "\(report.text)")
        #expect(report.text.contains("UNKNOWN_STORE"))
        // A served store with no such purchase is still a 404.
        #expect(try await harness.client.get("/v1/transactions/app_store/2000000000000001").status == 404)
    }
}
