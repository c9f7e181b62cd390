import AppStore
import AppStoreTestSupport
import Foundation
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// Finish Transaction: a client with `--appstore-finish-transactions on` has each consumable
/// finished at Apple (the fake on loopback) after its first claim commits, through the outbox as
/// a store acknowledgement; once, whatever the duplicates, and never for another kind of product
/// or for a client that did not ask.
@Suite struct FinishTransactions {
    static func consumable(_ apple: FakeAppStoreServerAPI, _ id: String, type: String = "Consumable") throws -> String {
        try apple.add(id, environment: "Sandbox", ["type": type])
        return try apple.pki.sign(
            AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id, "type": type]))
    }

    static func finishing(_ harness: VerifyHarness, _ value: String) async throws {
        var settings = ClientSettings()
        settings.settings = ["app_store.finish_transactions": [value]]
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
    }

    @Test func aConsumableIsFinishedOnceAfterItsFirstClaim() async throws {
        let apple = try FakeAppStoreServerAPI()
        let harness = try await AppOwnershipChecks.start(apple)
        defer { harness.stop() }
        try await Self.finishing(harness, "on")

        let gems = try Self.consumable(apple, "2000000000010001")
        for _ in 0..<2 {
            let answer = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": gems])
            #expect(answer.status == 200, "\(answer.text)")
        }
        let sword = try Self.consumable(apple, "2000000000010002", type: "Non-Consumable")
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": sword]).status == 200)
        // Apple took it and the outbox row is done; nothing else was queued for Apple.
        let statuses = {
            try await harness.pool.query(
                "SELECT status FROM outbox WHERE target = 'store_acknowledgement' ORDER BY id"
            ).map { try $0.decode("status", as: String.self) }
        }
        try await WebhookDelivery.waitUntil { try await statuses() == ["delivered"] }
        #expect(try await statuses() == ["delivered"])
        #expect(apple.finishedTransactions() == ["2000000000010001"])
        await harness.service.shutdown()
        await apple.shutdown()
    }

    @Test func aClientThatDidNotAskHasNothingFinished() async throws {
        let apple = try FakeAppStoreServerAPI()
        let harness = try await AppOwnershipChecks.start(apple)
        defer { harness.stop() }
        let gems = try Self.consumable(apple, "2000000000010101")
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": gems]).status == 200)
        #expect(
            try await harness.pool.query("SELECT 1 FROM outbox WHERE target = 'store_acknowledgement'").isEmpty)
        #expect(apple.finishedTransactions().isEmpty)
        await harness.service.shutdown()
        await apple.shutdown()
    }
}
