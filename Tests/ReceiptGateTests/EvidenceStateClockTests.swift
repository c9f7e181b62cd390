import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

/// What state evidence shows is judged on the service's clock, not the machine's: a period that
/// ends in a minute is active now, and expired for a service whose clock reads two minutes on
/// (within the request signatures' window, so the signed request is still taken).
@Suite struct EvidenceStateOnTheServiceClock {
    static func recordedState(clockAhead seconds: TimeInterval) async throws -> String {
        let harness = try await VerifyHarness.start(now: { Date().addingTimeInterval(seconds) })
        defer { harness.stop() }
        let ends = Int64(Date().timeIntervalSince1970 * 1000) + 60_000
        let evidence = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000009101", "originalTransactionId": "2000000000009101",
                "type": "Auto-Renewable Subscription", "productId": "vip.monthly", "expiresDate": ends,
            ]))
        let answer = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": evidence])
        #expect(answer.status == 200, "\(answer.text)")
        let rows = try await harness.pool.query(
            "SELECT state FROM transactions WHERE transaction_id = '2000000000009101'")
        return try #require(rows.first).decode("state", as: String.self)
    }

    @Test func aPeriodEndingInAMinuteIsActiveNowAndExpiredTwoMinutesOn() async throws {
        #expect(try await Self.recordedState(clockAhead: 0) == "active")
        #expect(try await Self.recordedState(clockAhead: 120) == "expired")
    }
}
