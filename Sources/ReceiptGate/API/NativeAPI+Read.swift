import Foundation
import ReceiptCore

/// Read access to the ledger for game backends, signed like /v1/verify (over an empty body).
/// A client sees only its own game's data; anything else is a 404.
extension NativeAPI {
    var readRoutes: [Route] {
        let signed = RouteAuthentication.signedClient(.allow)
        return [
            Route(
                "GET", "/v1/transactions/{store}/{transaction_id}", authentication: signed, rateLimits: [Self.perClient]
            ) { _, context in
                await transaction(context)
            },
            Route(
                "GET", "/v1/subscriptions/{store}/{original_transaction_id}", authentication: signed,
                rateLimits: [Self.perClient]
            ) { _, context in
                await subscription(context)
            },
            Route("GET", "/v1/players/{player_id}/transactions", authentication: signed, rateLimits: [Self.perClient]) {
                _, context in
                await playerPage(context)
            },
        ]
    }

    private func transaction(_ context: RouteContext) async -> RouteResponse {
        await reading(context) { client in
            guard
                let record = try await transactions.find(
                    store: StoreID(rawValue: context.pathParameters["store"] ?? ""),
                    transactionID: context.pathParameters["transaction_id"] ?? "", client: client)
            else { return Self.notFound("transaction") }
            return .json(["transaction": NativeTransaction(record)])
        }
    }

    private func subscription(_ context: RouteContext) async -> RouteResponse {
        await reading(context) { client in
            guard
                let (state, latest) = try await transactions.subscription(
                    store: StoreID(rawValue: context.pathParameters["store"] ?? ""),
                    original: context.pathParameters["original_transaction_id"] ?? "",
                    client: client)
            else { return Self.notFound("subscription") }
            return .json(SubscriptionView(state: state, latest: latest.map { NativeTransaction($0) }))
        }
    }

    private func playerPage(_ context: RouteContext) async -> RouteResponse {
        await reading(context) { client in
            let limit: Int, after: Int
            switch (
                Self.integer(context.query["limit"], name: "limit", range: 1...200),
                Self.integer(context.query["after"], name: "after", range: 0...Int(Int64.max))
            ) {
            case (.success(let l), .success(let a)): (limit, after) = (l ?? 50, a ?? 0)
            case (.failure(let problem), _), (_, .failure(let problem)):
                return Self.error(problem.code, problem.message)
            }
            let (page, more) = try await transactions.playerPage(
                playerID: context.pathParameters["player_id"] ?? "", client: client,
                after: Int64(after), limit: limit)
            return .json(
                PlayerPage(
                    transactions: page.map { NativeTransaction($0) }, nextAfter: more ? page.last?.managementID : nil))
        }
    }

    /// Runs a read for the authenticated client; a database failure is a retryable 502, never a crash.
    func reading(_ context: RouteContext, _ body: (ClientInfo) async throws -> RouteResponse) async -> RouteResponse {
        guard let client = context.client else { return Self.error(.unauthorized, "client authentication required") }
        if let refusal = refusal(ofPath: context.pathParameters) { return refusal }
        do {
            return try await body(client)
        } catch {
            context.logger.error("ledger read failed", ["error": "\(error)"])
            return Self.error(.verifierError, "the ledger could not be read; safe to retry")
        }
    }

    struct SubscriptionView: Encodable {
        let state: SubscriptionState
        let latest: NativeTransaction?

        enum CodingKeys: String, CodingKey {
            case store, environment, originalTransactionID = "original_transaction_id", productID = "product_id", status
            case expiresDateMs = "expires_date_ms", gracePeriodExpiresDateMs = "grace_period_expires_date_ms",
                autoRenew = "auto_renew"
            case revocationDateMs = "revocation_date_ms", latestTransaction = "latest_transaction"
            case willRenew = "will_renew", commitment
        }

        /// The commitment of the latest period, when it is one of a commitment plan.
        var commitment: BillingCommitment? { latest?.record.commitment }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(state.store.rawValue, forKey: .store)
            try container.encode(state.environment.rawValue, forKey: .environment)
            try container.encode(state.originalTransactionID, forKey: .originalTransactionID)
            try container.encode(state.productID, forKey: .productID)
            try container.encode(state.status.rawValue, forKey: .status)
            try container.encode(state.expiresDate?.epochMilliseconds, forKey: .expiresDateMs)
            try container.encode(state.gracePeriodExpiresDate?.epochMilliseconds, forKey: .gracePeriodExpiresDateMs)
            try container.encode(state.autoRenew, forKey: .autoRenew)
            try container.encode(state.revocationDate?.epochMilliseconds, forKey: .revocationDateMs)
            try container.encode(latest, forKey: .latestTransaction)
            try container.encode(
                EntitlementRules.willRenew(
                    autoRenew: state.autoRenew, commitment: commitment, periodEnd: state.expiresDate),
                forKey: .willRenew)
            try container.encode(commitment, forKey: .commitment)
        }
    }

    struct PlayerPage: Encodable {
        let transactions: [NativeTransaction]
        let nextAfter: Int64?
        enum CodingKeys: String, CodingKey { case transactions, nextAfter = "next_after" }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(transactions, forKey: .transactions)
            try container.encode(nextAfter, forKey: .nextAfter)
        }
    }

    /// A path the route cannot take: a parameter that is not an identifier, or a store this
    /// service does not serve (a misspelt store is the caller's mistake, not a missing record).
    func refusal(ofPath parameters: [String: String]) -> RouteResponse? {
        for (name, value) in parameters.sorted(by: { $0.key < $1.key }) {
            if let problem = Identifier.problem(value) {
                return Self.error(.invalidField, "path parameter '\(name)' \(problem)")
            }
        }
        if let store = parameters["store"], core.declaration(of: StoreID(rawValue: store)) == nil {
            let served = core.stores.map(\.store.rawValue).joined(separator: ", ")
            return Self.error(.invalidField, "UNKNOWN_STORE: store must be one of \(served), got \"\(store)\"")
        }
        return nil
    }

    static func notFound(_ what: String) -> RouteResponse {
        error(.notFound, "no such \(what) for this client")
    }

    static func integer(_ text: String?, name: String, range: ClosedRange<Int>) -> Result<Int?, JSONBody.Problem> {
        guard let text else { return .success(nil) }
        guard let value = Int(text), range.contains(value) else {
            return .failure(
                .init(code: .invalidField, message: "query parameter '\(name)' must be an integer in \(range)"))
        }
        return .success(value)
    }
}
