import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A store's answer moves a token only from the state that queued the report it answers: the
/// answer to a no-sale report that reaches the service after the token's late sale was queued
/// (taken or refused) leaves the sale on its way.
@Suite struct ExternalPurchaseTokenStates {
    static func report(_ kind: ExternalPurchaseReport.Kind, token: Int64) -> ExternalPurchaseReport {
        ExternalPurchaseReport(
            store: .appStore, environment: .sandbox, clientID: "c", appIdentifier: "com.example.game",
            tokenRowID: token, reportID: "SANDBOX_1", token: "t", kind: kind,
            requestIdentifier: UUID().uuidString.lowercased(), lines: [])
    }

    static func state(_ pool: PostgresPool, _ id: Int64) async throws -> String? {
        try await pool.query("SELECT state FROM external_purchase_tokens WHERE id = \(id)").first?.decode("state")
    }

    @Test func aNoSaleAnswerAfterTheLateSaleWasQueuedLeavesTheSaleOnItsWay() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let pool = harness.pool
        var ids: [Int64] = []
        for (index, state) in ["sale_queued", "sale_queued", "no_sale_queued"].enumerated() {
            ids.append(
                try await pool.query(
                    """
                    INSERT INTO external_purchase_tokens (client_id, store, environment, app_identifier, report_id, token,
                        store_deadline, report_by, state)
                    VALUES (\(harness.client.clientID), 'app_store', 'sandbox', 'com.example.game', \("SANDBOX_\(index)"),
                            \("t\(index)"), now(), now(), \(state))
                    RETURNING id
                    """
                )[0].decode("id"))
        }
        let tokens = ExternalPurchaseTokenRepository(pool: pool)
        try await tokens.settle(Self.report(.noSale, token: ids[0]), answer: "accepted")
        #expect(
            try await Self.state(pool, ids[0]) == "sale_queued", "the no-sale answer came after the sale was queued")
        try await tokens.refuse(Self.report(.noSale, token: ids[1]), why: "DuplicateTokenStatusNotAllowedError")
        #expect(try await Self.state(pool, ids[1]) == "sale_queued", "nor does its refusal hide the sale")
        try await tokens.settle(Self.report(.sale, token: ids[1]), answer: "accepted")
        #expect(try await Self.state(pool, ids[1]) == "reported")
        try await tokens.refuse(Self.report(.noSale, token: ids[2]), why: "refused")
        #expect(try await Self.state(pool, ids[2]) == "refused", "a report refused in its own state is refused")
    }
}
