import Foundation
import ReceiptCore

/// Who owns the app: `POST /v1/verify` with a device's signed proof of it (found by the store's
/// quick look at the evidence), or `GET /v1/app-transactions/{store}/{transaction_id}` asking the
/// store with any of the buyer's transaction ids. Answered with the ownership's facts; with a
/// player (the verify body's `player_id`, the read's `?player_id=`, else the player the ledger's
/// claim of that transaction names) the buyer's account is kept with it.
extension NativeAPI {
    var appOwnershipRoute: Route {
        Route(
            "GET", "/v1/app-transactions/{store}/{transaction_id}", authentication: .signedClient(.allow),
            rateLimits: [Self.perClient]
        ) { _, context in
            await lookUpAppOwnership(context)
        }
    }

    /// The app transaction, in the native API's shape: every field present, null when unknown.
    struct NativeAppTransaction: Encodable {
        let ownership: AppOwnership
        let store: StoreID

        enum CodingKeys: String, CodingKey {
            case store, environment, appTransactionID = "app_transaction_id", appIdentifier = "app_identifier"
            case appVersion = "app_version", originalAppVersion = "original_app_version"
            case originalPurchaseDateMs = "original_purchase_date_ms", originalPlatform = "original_platform"
            case preorderDateMs = "preorder_date_ms"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(store.rawValue, forKey: .store)
            try container.encode(ownership.environment.rawValue, forKey: .environment)
            try container.encode(ownership.appTransactionID, forKey: .appTransactionID)
            try container.encode(ownership.appIdentifier, forKey: .appIdentifier)
            try container.encode(ownership.appVersion, forKey: .appVersion)
            try container.encode(ownership.originalAppVersion, forKey: .originalAppVersion)
            try container.encode(ownership.originalPurchaseDate?.epochMilliseconds, forKey: .originalPurchaseDateMs)
            try container.encode(ownership.originalPlatform, forKey: .originalPlatform)
            try container.encode(ownership.preorderDate?.epochMilliseconds, forKey: .preorderDateMs)
        }
    }

    struct AppOwnershipAnswer: Encodable {
        let status: String?
        let appTransaction: NativeAppTransaction
        let playerID: String?
        enum CodingKeys: String, CodingKey {
            case status, appTransaction = "app_transaction", playerID = "player_id"
        }
    }

    /// The verify answer for a proof of owning the app; nil when the evidence is not one.
    func verifyAppOwnership(_ body: VerifyBody, context: RouteContext, client: ClientInfo) async -> RouteResponse? {
        let store = StoreID(rawValue: body.store)
        guard core.isAppOwnershipEvidence(body.receipt, store: store) else { return nil }
        return await answering(context, store: store, playerID: body.playerID, status: "verified") {
            try await core.appOwnership(.evidence(body.receipt), store: store, client: client, playerID: body.playerID)
        }
    }

    private func lookUpAppOwnership(_ context: RouteContext) async -> RouteResponse {
        guard let client = context.client else { return Self.error(.unauthorized, "client authentication required") }
        if let refusal = refusal(ofPath: context.pathParameters) { return refusal }
        let store = StoreID(rawValue: context.pathParameters["store"] ?? "")
        let transactionID = context.pathParameters["transaction_id"] ?? ""
        var playerID = context.query["player_id"]
        if let playerID, let problem = Identifier.problem(playerID) {
            return Self.error(.invalidField, "query parameter 'player_id' \(problem)")
        }
        do {
            if playerID == nil {
                playerID = try await core.transaction(store: store, transactionID: transactionID, client: client)?
                    .claim?.claimant.playerID
            }
        } catch {
            context.logger.error("ledger read failed", ["error": "\(error)"])
            return Self.error(.verifierError, "the ledger could not be read; safe to retry")
        }
        return await answering(context, store: store, playerID: playerID, status: nil) { [playerID] in
            try await core.appOwnership(
                .transactionID(transactionID), store: store, client: client, playerID: playerID)
        }
    }

    private func answering(
        _ context: RouteContext, store: StoreID, playerID: String?, status: String?,
        _ prove: () async throws -> AppOwnership
    ) async -> RouteResponse {
        do {
            let ownership = try await prove()
            return .json(
                AppOwnershipAnswer(
                    status: status, appTransaction: NativeAppTransaction(ownership: ownership, store: store),
                    playerID: playerID))
        } catch let error as StoreVerificationError {
            return Self.error(error.code, "\(error.reason): \(error.message)")
        } catch {
            context.logger.error("app ownership could not be checked", ["error": "\(error)"])
            if DatabaseOutage.answersRetry(error) {
                return DatabaseOutage.response(Self.error(.verifierError, DatabaseOutage.message))
            }
            return Self.error(.verifierError, "the app ownership could not be checked; safe to retry")
        }
    }
}
