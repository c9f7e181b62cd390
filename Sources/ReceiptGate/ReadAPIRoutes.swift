public import Foundation
public import HTTPServer
public import Postgres
public import ReceiptCore

/// Read access to the ledger for game backends, with the same request signature as /v1/verify
/// (over an empty body). A client sees only its own game's data; anything else is a 404.
public struct ReadAPIRoutes: Sendable {
    let pool: PostgresPool
    let authentication: ClientAuthentication

    public init(pool: PostgresPool, authentication: ClientAuthentication) {
        self.pool = pool
        self.authentication = authentication
    }

    public func register(on router: inout Router) {
        router.get("/v1/transactions/{store}/{transaction_id}") { [pool, authentication] request in
            let client = try await authentication.authenticate(request)
            let store = try request.parameter("store"), id = try request.parameter("transaction_id")
            let rows = try await pool.query("""
                SELECT \(unescaped: LedgerTransaction.columns) FROM transactions
                WHERE store = \(store) AND transaction_id = \(id) AND (client_id = \(client.clientID) OR (game_id IS NOT NULL AND game_id = \(client.gameID)))
                ORDER BY environment = 'production' DESC LIMIT 1
                """)
            guard let row = rows.first else { throw Self.notFound("transaction") }
            return .json(["transaction": try LedgerTransaction(row: row)])
        }

        router.get("/v1/subscriptions/{store}/{original_transaction_id}") { [pool, authentication] request in
            let client = try await authentication.authenticate(request)
            let store = try request.parameter("store"), original = try request.parameter("original_transaction_id")
            let rows = try await pool.query("""
                SELECT s.store, s.environment, s.original_transaction_id, s.product_id, s.status, s.auto_renew,
                       (extract(epoch from s.expires_date) * 1000)::bigint AS expires_ms,
                       (extract(epoch from s.grace_period_expires_date) * 1000)::bigint AS grace_ms,
                       (extract(epoch from s.revocation_date) * 1000)::bigint AS revocation_ms, s.latest_transaction_id
                FROM subscriptions s JOIN clients c ON c.id = s.client_id
                WHERE s.store = \(store) AND s.original_transaction_id = \(original)
                  AND (s.client_id = \(client.clientID) OR (c.game_id IS NOT NULL AND c.game_id = \(client.gameID)))
                ORDER BY s.environment = 'production' DESC LIMIT 1
                """)
            guard let row = rows.first else { throw Self.notFound("subscription") }
            let latest = try await pool.query("""
                SELECT \(unescaped: LedgerTransaction.columns) FROM transactions
                WHERE store = \(store) AND transaction_id = \(try row.decode("latest_transaction_id", as: String?.self) ?? "")
                """).first.map { try LedgerTransaction(row: $0) }
            return .json(SubscriptionView(
                store: try row.decode("store"), environment: try row.decode("environment"),
                originalTransactionID: try row.decode("original_transaction_id"), productID: try row.decode("product_id"),
                status: try row.decode("status"), expiresDateMs: try row.decode("expires_ms"), gracePeriodExpiresDateMs: try row.decode("grace_ms"),
                autoRenew: try row.decode("auto_renew"), revocationDateMs: try row.decode("revocation_ms"), latestTransaction: latest))
        }

        router.get("/v1/players/{player_id}/transactions") { [pool, authentication] request in
            let client = try await authentication.authenticate(request)
            let player = try request.parameter("player_id")
            let limit = try Self.integer(request.query["limit"], name: "limit", range: 1...200) ?? 50
            let after = try Self.integer(request.query["after"], name: "after", range: 0...Int(Int64.max)) ?? 0
            let rows = try await pool.query("""
                SELECT \(unescaped: LedgerTransaction.columns) FROM transactions
                WHERE player_id = \(player) AND id > \(after)
                  AND (client_id = \(client.clientID) OR (game_id IS NOT NULL AND game_id = \(client.gameID)))
                ORDER BY id LIMIT \(limit + 1)
                """)
            let page = try rows.prefix(limit).map { try LedgerTransaction(row: $0) }
            return .json(PlayerPage(transactions: page, nextAfter: rows.count > limit ? page.last?.id : nil))
        }
    }

    struct SubscriptionView: Encodable {
        let store: String, environment: String, originalTransactionID: String, productID: String?, status: String
        let expiresDateMs: Int64?, gracePeriodExpiresDateMs: Int64?, autoRenew: Bool?, revocationDateMs: Int64?
        let latestTransaction: LedgerTransaction?

        enum CodingKeys: String, CodingKey {
            case store, environment, originalTransactionID = "original_transaction_id", productID = "product_id", status
            case expiresDateMs = "expires_date_ms", gracePeriodExpiresDateMs = "grace_period_expires_date_ms", autoRenew = "auto_renew"
            case revocationDateMs = "revocation_date_ms", latestTransaction = "latest_transaction"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(store, forKey: .store)
            try container.encode(environment, forKey: .environment)
            try container.encode(originalTransactionID, forKey: .originalTransactionID)
            try container.encode(productID, forKey: .productID)
            try container.encode(status, forKey: .status)
            try container.encode(expiresDateMs, forKey: .expiresDateMs)
            try container.encode(gracePeriodExpiresDateMs, forKey: .gracePeriodExpiresDateMs)
            try container.encode(autoRenew, forKey: .autoRenew)
            try container.encode(revocationDateMs, forKey: .revocationDateMs)
            try container.encode(latestTransaction, forKey: .latestTransaction)
        }
    }

    struct PlayerPage: Encodable {
        let transactions: [LedgerTransaction]
        let nextAfter: Int64?
        enum CodingKeys: String, CodingKey { case transactions, nextAfter = "next_after" }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(transactions, forKey: .transactions)
            try container.encode(nextAfter, forKey: .nextAfter)
        }
    }

    static func notFound(_ what: String) -> HTTPError {
        HTTPError(status: 404, code: ErrorCode.notFound.rawValue, message: "no such \(what) for this client")
    }

    static func integer(_ text: String?, name: String, range: ClosedRange<Int>) throws -> Int? {
        guard let text else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw HTTPError(status: 400, code: ErrorCode.invalidField.rawValue, message: "query parameter '\(name)' must be an integer in \(range)")
        }
        return value
    }
}
