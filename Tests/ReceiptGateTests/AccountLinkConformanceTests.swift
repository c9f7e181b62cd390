import Foundation
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The AccountLink routes' real responses (`/iap`, `/oauth/token`, `/userinfo`, `/.well-known/*`),
/// checked against Deploy/openapi.yaml by the same independent validator as the rest of the
/// surface (Conformance/validate_responses.py).
@Suite struct AccountLinkConformance {
    @Test(
        .enabled(
            if: OpenAPIConformance.python != nil || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to validate responses against the OpenAPI document"))
    func responsesMatchTheDocument() async throws {
        let python = try #require(OpenAPIConformance.python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        // Two calls per purchase a day, so the third answers 429.
        let harness = try await AccountLinkEndToEnd.start(rateLimits: [
            "accountlink.iap.purchase": .init(limit: 2, window: VerifyHarness.rateLimitWindow)
        ])
        defer { harness.stop() }
        let port = harness.client.port
        var records: [[String: Any]] = []
        func record(_ method: String, _ path: String, _ response: RawHTTP.Response) throws {
            records.append([
                "path": path, "method": method, "status": response.status,
                "body": try JSONSerialization.jsonObject(with: response.body),
            ])
        }
        func token(_ form: String) async throws -> RawHTTP.Response {
            try await RawHTTP.request(
                port: port, method: "POST", path: "/oauth/token",
                headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data(form.utf8))
        }

        let jws = try AccountLinkEndToEnd.subscription(harness, "2000000000160001")
        let created = try await AccountLinkEndToEnd.iap(port, jws)
        try record("post", "/iap", created)
        let access = try #require(try created.json()["access_token"] as? String)
        let refresh = try #require(try created.json()["refresh_token"] as? String)
        try record("post", "/iap", try await AccountLinkEndToEnd.iap(port, jws, token: access))
        let limited = try await AccountLinkEndToEnd.iap(port, jws)
        #expect(
            VerifyHarness.isTheWindowsEnd(limited.headers["retry-after"].flatMap(Int.init)),
            "\(limited.status) \(limited.headers)")
        try record("post", "/iap", limited)
        try record("post", "/iap", try await AccountLinkEndToEnd.iap(port, jws, extra: ["X-Client-OS": "\u{1}"]))
        try record("post", "/iap", try await AccountLinkEndToEnd.iap(port, jws, email: "ada@example.com\r\n"))
        try record("post", "/iap", try await AccountLinkEndToEnd.iap(port, "not-a-receipt"))
        try record(
            "post", "/iap",
            try await AccountLinkEndToEnd.iap(
                port, try AccountLinkEndToEnd.subscription(harness, "2000000000160002", revoked: true)))
        try record(
            "post", "/iap",
            try await AccountLinkEndToEnd.iap(
                port, try AccountLinkEndToEnd.subscription(harness, "2000000000160003"), token: "not.a.token"))

        try record("post", "/oauth/token", try await token("grant_type=refresh_token&refresh_token=\(refresh)"))
        try record("post", "/oauth/token", try await token("grant_type=refresh_token&refresh_token=\(refresh)"))
        try record("post", "/oauth/token", try await token("grant_type=client_credentials"))
        try record(
            "post", "/oauth/token", try await token("grant_type=password&client_id=rgc_nobody&username=a&password=b"))
        for _ in 0..<11 {
            try record(
                "post", "/oauth/token",
                try await token("grant_type=password&client_id=\(harness.client.clientID)&username=nobody&password=b"))
        }

        try record("get", "/userinfo", try await AccountLinkEndToEnd.userinfo(port, access))
        try record("get", "/userinfo", try await AccountLinkEndToEnd.userinfo(port, "expired"))
        try record(
            "get", "/.well-known/openid-configuration",
            try await RawHTTP.request(port: port, path: "/.well-known/openid-configuration"))
        try record(
            "get", "/.well-known/jwks.json", try await RawHTTP.request(port: port, path: "/.well-known/jwks.json"))
        await harness.service.shutdown()

        let iapStatuses = Set(records.filter { $0["path"] as? String == "/iap" }.compactMap { $0["status"] as? Int })
        #expect(iapStatuses.isSuperset(of: [200, 400, 401, 422, 429]), "\(iapStatuses)")
        let tokenStatuses = Set(
            records.filter { $0["path"] as? String == "/oauth/token" }.compactMap { $0["status"] as? Int })
        #expect(tokenStatuses.isSuperset(of: [200, 400, 429]), "\(tokenStatuses)")
        try await OpenAPIConformance.validate(records, python: python, label: "accountlink-conformance")
    }
}
