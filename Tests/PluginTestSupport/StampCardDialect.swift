import AppStore
import Foundation
package import ReceiptCore

/// A small dialect written only against ReceiptCore, for tests of the core contract: an app
/// (no credential) trades a purchase for a stamp-card account and a bearer token, and reads the
/// card back with that token. Everything it keeps goes through the core's protocols: accounts
/// and links in the record's transaction, tokens in the token store, a shared rate limit per
/// caller address. It holds no SQL and no state of its own.
package struct StampCardDialect: DialectProvider {
    package let name = "stamp-card"
    package static let tokenKind = "stampcard.access"
    package static let perAddress = RateLimitPolicy(
        name: "stampcard.address", key: .callerAddress, limit: 3, window: .seconds(86_400), shared: true)

    package init() {}

    package func routes(core: any DialectCore) -> [Route] {
        [
            Route("POST", "/test/stamp-cards", authentication: .appSDK, rateLimits: [Self.perAddress]) {
                request, context in
                await Self.redeem(request, context: context, core: core)
            },
            Route("GET", "/test/stamp-cards/me", authentication: .bearerToken(kind: Self.tokenKind)) { _, context in
                await Self.card(context: context, core: core)
            },
        ]
    }

    package func render(_ refusal: RouteRefusal) -> RouteResponse {
        let status = [ErrorCode.unauthorized: 401, .rateLimited: 429, .verifierError: 503][refusal.code] ?? 400
        return .json(["refused": refusal.code.rawValue], status: status)
    }

    struct Redeem: Decodable { let bundle_id: String; let evidence: String; let nickname: String }

    static func redeem(_ request: RouteRequest, context: RouteContext, core: any DialectCore) async -> RouteResponse {
        guard case .success(let body) = JSONBody.decode(Redeem.self, from: request.body) else {
            return .json(["refused": "BODY"], status: 400)
        }
        do {
            guard let client = try await core.client(forAppIdentifier: body.bundle_id, store: .appStore) else {
                return .json(["refused": "UNKNOWN_APP"], status: 404)
            }
            let proven = try await core.prove(
                VerificationRequest(store: .appStore, evidence: body.evidence, requestID: context.requestID),
                client: client)
            let key = PurchaseKey(
                store: proven.purchase.store,
                originalTransactionID: proven.purchase.originalTransactionID ?? proven.purchase.transactionID)
            // The link is decided inside the record's transaction: the first account to claim the purchase keeps it.
            let (_, accountID) = try await core.record(proven, client: client) { _, scope in
                if let linked = try scope.linkedAccount(key) { return linked.id }
                let account = try scope.createAccount(AccountDraft(client: client, username: body.nickname))
                return try scope.linkPurchase(key, to: account.id)
            }
            let token = try await core.tokens.issue(
                TokenRequest(kind: tokenKind, clientID: client.clientID, accountID: accountID, lifetime: .seconds(600)))
            return .json(["account_id": accountID, "token": token.token])
        } catch let error as StoreVerificationError {
            return .json(["refused": error.code.rawValue], status: 422)
        } catch {
            return .json(["refused": "UNAVAILABLE"], status: 503)
        }
    }

    static func card(context: RouteContext, core: any DialectCore) async -> RouteResponse {
        guard let accountID = context.token?.accountID else { return .json(["refused": "NO_ACCOUNT"], status: 403) }
        do {
            guard let account = try await core.accounts.account(id: accountID) else {
                return .json(["refused": "GONE"], status: 404)
            }
            let purchases = try await core.accounts.links(accountID: accountID).map(\.originalTransactionID)
            return .json(CardView(nickname: account.username, purchases: purchases))
        } catch {
            return .json(["refused": "UNAVAILABLE"], status: 503)
        }
    }

    package struct CardView: Codable, Equatable {
        package let nickname: String
        package let purchases: [String]

        package init(nickname: String, purchases: [String]) {
            self.nickname = nickname
            self.purchases = purchases
        }
    }
}
