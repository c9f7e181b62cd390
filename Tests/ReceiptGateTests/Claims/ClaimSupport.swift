import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// What the claim tests share: a game's claim as the native API takes it, the ledger's record of
/// it, and what the game server was sent (through a receiver, or as queued in the outbox).
enum ClaimSupport {
    /// The game's names for whom it claims, as a game server sends them with `/v1/verify`.
    static let player: [String: String] = [
        "player_id": "player-7", "character_id": "char-7", "server_id": "server-3", "game_version": "2.4.1",
    ]

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// An auto-renewable subscription period of vip.monthly, paid up for `days` more.
    static func subscription(_ id: String, original: String? = nil, days: Int64 = 30) -> [String: any Sendable] {
        [
            "transactionId": id, "originalTransactionId": original ?? id, "type": "Auto-Renewable Subscription",
            "productId": "vip.monthly",
            "expiresDate": now() + days * 86_400_000,
        ]
    }

    /// A service for com.example.game whose webhooks and deliveries go to `receiver` (`/hooks`),
    /// its outbox polling in tens of milliseconds.
    static func appStore(
        _ receiver: GooglePlayHarness.Receiver, dialects: [any DialectProvider] = [],
        adminToken: String? = nil
    ) async throws -> VerifyHarness {
        let hooks = "http://127.0.0.1:\(receiver.server.port)/hooks"
        return try await VerifyHarness.start(
            outbox: VerifyHarness.fastOutbox(), adminToken: adminToken, webhookURL: hooks, deliveryURL: hooks,
            dialects: dialects)
    }

    /// Sends the client's refund callbacks to `receiver` (`/refunds`).
    static func sendRefundCallbacks(of harness: VerifyHarness, to receiver: GooglePlayHarness.Receiver) async throws {
        var settings = ClientSettings()
        settings.refundCallbackURL = "http://127.0.0.1:\(receiver.server.port)/refunds"
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
    }

    /// `POST /v1/verify` claiming `receipt` for `player` (and `extra` fields).
    static func claim(
        _ client: SignedClient, store: String = "app_store", receipt: String, for player: [String: String] = player,
        extra: [String: Any] = [:]
    ) async throws -> RawHTTP.Response {
        var body: [String: Any] = ["store": store, "receipt": receipt]
        for (key, value) in player { body[key] = value }
        for (key, value) in extra { body[key] = value }
        return try await client.post("/v1/verify", json: body)
    }

    /// `GET /v1/transactions/{store}/{id}`: its status and the `transaction` object (empty when absent).
    static func record(
        _ client: SignedClient, store: String = "app_store", _ id: String
    ) async throws -> (status: Int, transaction: [String: Any]) {
        let response = try await client.get("/v1/transactions/\(store)/\(id)")
        return (response.status, (try? response.json())?["transaction"] as? [String: Any] ?? [:])
    }

    /// The outbox rows' payloads (a webhook's envelope, a callback's body), oldest first.
    static func queued(_ pool: PostgresPool, type: String? = nil, target: String? = nil) async throws -> [[String: Any]]
    {
        let rows = try await pool.query(
            """
            SELECT \(unescaped: OutboxRepository.bodyColumn) AS p FROM outbox o
            WHERE (\(type)::text IS NULL OR event_type = \(type)) AND (\(target)::text IS NULL OR target = \(target))
            ORDER BY o.id
            """)
        return try rows.map { row in
            let text = try row.decode("p", as: String.self)
            return (try JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
        }
    }

    /// The webhook events of `type` about `transactionID` that reached `receiver`: their `data`.
    static func received(
        _ receiver: GooglePlayHarness.Receiver, _ type: String, about transactionID: String
    ) -> [[String: Any]] {
        receiver.bodies("/hooks").filter { $0["type"] as? String == type }.compactMap { $0["data"] as? [String: Any] }
            .filter { data in
                let transaction = data["transaction"] as? [String: Any]
                return (transaction?["transaction_id"] as? String ?? data["transaction_id"] as? String) == transactionID
            }
    }

    /// The record's `claim` is `player`'s, made between `earliest` and `latest` (epoch ms).
    static func expectClaim(
        _ record: [String: Any], by player: [String: String] = player, madeWithin window: ClosedRange<Int64>,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        guard let claim = record["claim"] as? [String: Any] else {
            Issue.record(
                "the transaction carries no claim: \(record["claim"] ?? "absent")", sourceLocation: sourceLocation)
            return
        }
        for key in ["player_id", "character_id", "server_id", "game_version"] {
            #expect(claim[key] as? String == player[key], "claim.\(key): \(claim)", sourceLocation: sourceLocation)
        }
        let at = (claim["claimed_at_ms"] as? NSNumber)?.int64Value ?? -1
        // A second either side: the database's clock and ours round differently.
        #expect(
            (window.lowerBound - 1000...window.upperBound + 1000).contains(at), "claimed_at_ms \(at) not in \(window)",
            sourceLocation: sourceLocation)
    }

    /// What a first verification owes the game server reached it once: the `transaction.verified`
    /// webhook and the `entitlement.delivery` carrying the claim's player, character, server and game.
    static func expectFirstVerificationDelivered(
        to receiver: GooglePlayHarness.Receiver, about transactionID: String,
        for player: [String: String] = player, sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(
            received(receiver, "transaction.verified", about: transactionID).count == 1, "\(receiver.bodies("/hooks"))",
            sourceLocation: sourceLocation)
        let deliveries = received(receiver, "entitlement.delivery", about: transactionID)
        #expect(deliveries.count == 1, "\(receiver.bodies("/hooks"))", sourceLocation: sourceLocation)
        for key in ["player_id", "character_id", "server_id"] {
            #expect(
                deliveries.first?[key] as? String == player[key], "delivery.\(key): \(deliveries)",
                sourceLocation: sourceLocation)
        }
        #expect(deliveries.first?["game_id"] as? Int == 42, sourceLocation: sourceLocation)
    }

    /// A refund object as the read API and webhooks show it, compared field by field (null where nil).
    static func isRefund(_ value: Any?, kind: String, percentage: Int?, quantity: Int?, storeType: String?) -> Bool {
        guard let refund = value as? [String: Any],
            Set(refund.keys) == ["kind", "percentage_milliunits", "quantity", "store_type"]
        else { return false }
        func same(_ field: String, _ expected: Any?) -> Bool {
            switch expected {
            case let number as Int: return (refund[field] as? NSNumber)?.intValue == number && !(refund[field] is Bool)
            case let text as String: return refund[field] as? String == text
            default: return refund[field] is NSNull
            }
        }
        return same("kind", kind) && same("percentage_milliunits", percentage) && same("quantity", quantity)
            && same("store_type", storeType)
    }

    static func stop(_ receiver: GooglePlayHarness.Receiver) {
        Task.detached { await receiver.server.shutdown() }
    }
}
