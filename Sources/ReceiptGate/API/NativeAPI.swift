import Foundation
import ReceiptCore

/// The native, normalized API under /v1 that game backends call. It is mounted like any dialect:
/// its routes declare their authentication and rate limits, and the core applies them.
struct NativeAPI: Sendable {
    let core: ServiceDialectCore
    let transactions: TransactionRepository
    let entitlements: EntitlementRepository
    let evidenceFields: EvidenceFieldReading

    init(core: ServiceDialectCore, transactions: TransactionRepository, entitlements: EntitlementRepository) {
        self.core = core
        self.transactions = transactions
        self.entitlements = entitlements
        evidenceFields = EvidenceFieldReading(stores: core.stores)
    }

    /// Generous, and per process so it costs no database round trip.
    static let perClient = RateLimitPolicy(
        name: "native.client", key: .client, limit: 10_000, window: .seconds(1), shared: false)

    var routes: [Route] {
        [
            Route("POST", "/v1/verify", authentication: .signedClient(.allow), rateLimits: [Self.perClient]) {
                request, context in
                await verify(request, context: context)
            }, orderRoute, authenticateRoute, consumptionRoute, entitlementRoute, appOwnershipRoute,
        ] + readRoutes
    }

    /// The one status table of the native API.
    static func status(for code: ErrorCode) -> Int {
        switch code {
        case .missingFields, .invalidField: 400
        case .unauthorized: 401
        case .forbidden: 403
        case .notFound: 404
        case .duplicateTransaction: 409
        case .environmentMismatch: 412
        case .payloadTooLarge: 413
        case .productMismatch, .bundleMismatch, .verificationFailed, .accountMismatch: 422
        case .rateLimited: 429
        case .verifierError: 502
        }
    }

    /// `{"error": CODE, "message": ...}` with the status of the table.
    static func error(_ code: ErrorCode, _ message: String) -> RouteResponse {
        .json(["error": code.rawValue, "message": message], status: status(for: code))
    }

    static func render(_ refusal: RouteRefusal) -> RouteResponse { error(refusal.code, refusal.message) }

    struct VerifyBody {
        let store: String
        let receipt: String
        let productID: String?
        let appAccountToken: String?
        let playerID: String?
        let characterID: String?
        let serverID: String?
        let gameVersion: String?
        let restore: Bool?
        /// The app, for a store whose evidence (a bare purchase token) may not name it.
        let packageName: String?
        /// The fields the store declared beside `receipt`, or why one was refused.
        var evidenceFields: Result<[String: String], JSONBody.Problem> = .success([:])

        enum CodingKeys: String, CodingKey, CaseIterable {
            case packageName = "package_name"
            case store, receipt, productID = "product_id", appAccountToken = "app_account_token", playerID = "player_id"
            case characterID = "character_id", serverID = "server_id", gameVersion = "game_version", restore
        }
    }

    /// `status` is `verified` only for a purchase to deliver; otherwise its real state
    /// (`refunded`, `revoked`, `expired`), still recorded and still 200.
    struct VerifyResponse: Encodable {
        let status: String
        let duplicate: Bool
        let firstVerifiedAt: String
        let transaction: NativeTransaction
        /// Set on a duplicate claimed first for another player of the game.
        let firstClaimedBy: Claimant?
        enum CodingKeys: String, CodingKey {
            case status, duplicate, firstVerifiedAt = "first_verified_at", transaction, firstClaimedBy =
                "first_claimed_by"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(status, forKey: .status)
            try container.encode(duplicate, forKey: .duplicate)
            try container.encode(firstVerifiedAt, forKey: .firstVerifiedAt)
            try container.encode(transaction, forKey: .transaction)
            try container.encode(firstClaimedBy.map { NativeClaimant(claimant: $0) }, forKey: .firstClaimedBy)
        }
    }

    func verify(_ request: RouteRequest, context: RouteContext) async -> RouteResponse {
        guard let client = context.client else { return Self.error(.unauthorized, "client authentication required") }
        let body: VerifyBody
        switch VerifyBody.decode(request.body, evidence: evidenceFields) {
        case .success(let decoded): body = decoded
        case .failure(let problem): return Self.error(problem.code, problem.message)
        }
        let declaration = core.declaration(of: StoreID(rawValue: body.store))
        if let problem = Self.validate(body, declaration: declaration) {
            return Self.error(problem.code, problem.message)
        }
        if let ownership = await verifyAppOwnership(body, context: context, client: client) { return ownership }
        var verification = VerificationRequest(
            store: StoreID(rawValue: body.store), evidence: body.receipt, requestID: context.requestID)
        switch body.evidenceFields {
        case .success(let fields): verification.evidenceFields = fields
        case .failure(let problem): return Self.error(problem.code, problem.message)
        }
        verification.productID = body.productID
        verification.accountToken = body.appAccountToken
        verification.playerID = body.playerID
        verification.characterID = body.characterID
        verification.serverID = body.serverID
        verification.gameVersion = body.gameVersion
        verification.appIdentifier = body.packageName
        do {
            let outcome = try await core.verify(verification, client: client)
            let state = outcome.transaction.state
            let response = VerifyResponse(
                status: state == .active ? "verified" : state.rawValue, duplicate: outcome.duplicate,
                firstVerifiedAt: Timestamps.iso8601(outcome.transaction.firstVerifiedAt),
                transaction: NativeTransaction(outcome.transaction, accountMatch: outcome.accountMatch),
                firstClaimedBy: outcome.firstClaimedBy)
            return .json(encoded: response.encoded())
        } catch let error as StoreVerificationError {
            return Self.error(error.code, "\(error.reason): \(error.message)")
        } catch {
            context.logger.error("verification failed", ["error": "\(error)"])
            if DatabaseOutage.answersRetry(error) {
                return DatabaseOutage.response(Self.error(.verifierError, DatabaseOutage.message))
            }
            return Self.error(.verifierError, "the verification could not be completed; safe to retry")
        }
    }

    static func validate(_ body: VerifyBody, declaration: StoreDeclaration?) -> JSONBody.Problem? {
        guard !body.store.isEmpty else { return .init(code: .missingFields, message: "missing field 'store'") }
        guard !body.receipt.isEmpty else { return .init(code: .missingFields, message: "missing field 'receipt'") }
        if let problem = Identifier.problem(body.store, maxBytes: 64) {
            return .init(code: .invalidField, message: "field 'store' \(problem)")
        }
        for (name, value) in [
            ("product_id", body.productID), ("app_account_token", body.appAccountToken), ("player_id", body.playerID),
            ("character_id", body.characterID), ("server_id", body.serverID), ("game_version", body.gameVersion),
            ("package_name", body.packageName),
        ] {
            if let value, let problem = Identifier.problem(value) {
                return .init(code: .invalidField, message: "field '\(name)' \(problem)")
            }
        }
        if let token = body.appAccountToken, let declaration, let wellFormed = declaration.accountTokenIsWellFormed,
            !wellFormed(token)
        {
            return .init(
                code: .invalidField,
                message: "field 'app_account_token' is not a well-formed \(declaration.displayName) account token")
        }
        return nil
    }
}
