public import Foundation
public import HTTPServer
public import ReceiptCore

/// The native, normalized API under /v1 that game backends call.
public struct NativeAPIRoutes: Sendable {
    let pipeline: VerifyPipeline
    let authentication: ClientAuthentication
    let logger: Logger

    public init(pipeline: VerifyPipeline, authentication: ClientAuthentication, logger: Logger) {
        self.pipeline = pipeline
        self.authentication = authentication
        self.logger = logger
    }

    struct VerifyBody: Decodable {
        let store: String
        let receipt: String
        let productID: String?
        let appAccountToken: String?
        let playerID: String?
        let characterID: String?
        let serverID: String?
        let gameVersion: String?
        let restore: Bool?

        enum CodingKeys: String, CodingKey {
            case store, receipt, productID = "product_id", appAccountToken = "app_account_token", playerID = "player_id"
            case characterID = "character_id", serverID = "server_id", gameVersion = "game_version", restore
        }
    }

    struct VerifyResponse: Encodable {
        let status = "verified"
        let duplicate: Bool
        let firstVerifiedAt: String
        let transaction: LedgerTransaction
        enum CodingKeys: String, CodingKey { case status, duplicate, firstVerifiedAt = "first_verified_at", transaction }
    }

    /// The one status table of the native API.
    static func status(for code: ErrorCode) -> Int {
        switch code {
        case .missingFields, .invalidField: 400
        case .unauthorized: 401
        case .notFound: 404
        case .duplicateTransaction: 409
        case .environmentMismatch: 412
        case .payloadTooLarge: 413
        case .productMismatch, .bundleMismatch, .verificationFailed: 422
        case .rateLimited: 429
        case .verifierError: 502
        }
    }

    public func register(on router: inout Router) {
        router.post("/v1/verify") { [pipeline, authentication, logger] request in
            let client = try await authentication.authenticate(request)
            let body = try request.decodeJSON(VerifyBody.self)
            try Self.validate(body)
            var verification = VerificationRequest(store: StoreID(rawValue: body.store), evidence: body.receipt, requestID: request.requestID)
            verification.productID = body.productID
            verification.accountToken = body.appAccountToken
            verification.playerID = body.playerID
            verification.characterID = body.characterID
            verification.serverID = body.serverID
            do {
                let outcome = try await pipeline.verify(verification, client: client)
                logger.info("verified", ["request.id": request.requestID, "client.id": client.clientID, "store": body.store,
                                         "transaction.id": String(outcome.transaction.id), "duplicate": String(outcome.duplicate)])
                return .json(VerifyResponse(duplicate: outcome.duplicate, firstVerifiedAt: Self.iso8601(outcome.transaction.firstVerifiedAt),
                                            transaction: outcome.transaction))
            } catch let error as StoreVerificationError {
                logger.info("verification refused", ["request.id": request.requestID, "client.id": client.clientID,
                                                      "error.code": error.code.rawValue, "error.reason": error.reason])
                throw HTTPError(status: Self.status(for: error.code), code: error.code.rawValue, message: "\(error.reason): \(error.message)")
            }
        }
    }

    static func validate(_ body: VerifyBody) throws {
        func invalid(_ field: String, _ problem: String) -> HTTPError {
            HTTPError(status: 400, code: ErrorCode.invalidField.rawValue, message: "field '\(field)' \(problem)")
        }
        guard !body.store.isEmpty else { throw HTTPError(status: 400, code: ErrorCode.missingFields.rawValue, message: "missing field 'store'") }
        guard !body.receipt.isEmpty else { throw HTTPError(status: 400, code: ErrorCode.missingFields.rawValue, message: "missing field 'receipt'") }
        for (name, value) in [("product_id", body.productID), ("app_account_token", body.appAccountToken), ("player_id", body.playerID),
                              ("character_id", body.characterID), ("server_id", body.serverID), ("game_version", body.gameVersion)] {
            if let value, value.count > 256 { throw invalid(name, "is longer than 256 characters") }
        }
        if body.store == StoreID.appStore.rawValue, let token = body.appAccountToken, UUID(uuidString: token) == nil {
            throw invalid("app_account_token", "must be a UUID for the App Store")
        }
    }

    static func iso8601(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
