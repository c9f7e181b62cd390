import Foundation
import JSON
public import ReceiptCore

/// The Alogame IAP Gateway contract, to the letter: a game server written from that
/// page works unchanged against ReceiptGate. Everything real happens in the core; this type only
/// translates the wire format and owns the one status table of this dialect.
public struct AlogameGateway: DialectProvider {
    public let name = "alogame-gateway"

    public init() {}

    /// Both routes are idempotent, so a re-sent signed request (an HTTP retry) is answered like
    /// the first: verify says DUPLICATE_TRANSACTION, lookup gives the same answer. No replay refusal.
    public func routes(core: any DialectCore) -> [Route] {
        [
            Route("POST", "/iap/gateway/verify", authentication: .signedClient(.allow)) { request, context in
                await Self.verify(request, context: context, core: core)
            },
            Route("POST", "/iap/gateway/lookup-receipt", authentication: .signedClient(.allow)) { request, context in
                await Self.lookUpReceipt(request, context: context, core: core)
            },
        ]
    }

    /// The core's refusals (401, 429...) in the contract's envelope.
    public func render(_ refusal: RouteRefusal) -> RouteResponse {
        let (status, code) = Self.errorTable(refusal.code)
        return Self.failure(
            refusal.code == .rateLimited ? 429 : status, refusal.code == .rateLimited ? "RATE_LIMITED" : code,
            refusal.message)
    }

    public var refundCallbacks: (any RefundCallbackRenderer)? { RefundCallbacks() }

    /// The contract's `os_id` values and the operating system each names.
    static let osIDs: [(Int, OperatingSystem)] = [(2, .ios), (1, .android)]

    /// What the contract's devices cannot name, said in its error: the served stores of no
    /// system an `os_id` names (a web shop's purchases reach the ledger by its notifications, a
    /// desktop store's through `POST /v1/verify`).
    static func unreachable(among stores: [StoreDeclaration]) -> String {
        let web = stores.filter { store in !osIDs.contains { store.operatingSystems.contains($0.1) } }
        guard !web.isEmpty else { return "" }
        return "; \(web.map(\.displayName).joined(separator: " and ")) purchases cannot be sent here"
            + " (no os_id names them): they reach the ledger by the store's own notifications, or POST /v1/verify"
    }

    /// The store `lookup-receipt` asks: the contract's lookup is for iOS purchases, so the order
    /// ids are those of the first served store of iOS apps.
    static func lookupStore(among stores: [StoreDeclaration]) -> StoreDeclaration? {
        stores.first { $0.operatingSystems.contains(.ios) }
    }

    // MARK: - POST /iap/gateway/lookup-receipt (support tool)

    static func lookUpReceipt(
        _ request: RouteRequest, context: RouteContext, core: any DialectCore
    ) async -> RouteResponse {
        guard let client = context.client else { return failure(401, "UNAUTHORIZED", "client authentication required") }
        struct Body: Decodable { let order_id: String }
        guard let body = try? JSONDecoder().decode(Body.self, from: request.body), !body.order_id.isEmpty else {
            return failure(400, "MISSING_FIELDS", "missing required field: order_id")
        }
        guard body.order_id.count <= 64,
            body.order_id.unicodeScalars.allSatisfy({ $0.isASCII && CharacterSet.alphanumerics.contains($0) })
        else {
            return failure(400, "MISSING_FIELDS", "order_id must be the Apple order id (letters and digits)")
        }
        do {
            guard let store = Self.lookupStore(among: core.stores)?.store else {
                return failure(502, "VERIFIER_ERROR", "no store provider can look up orders")
            }
            let result = try await core.lookUpOrder(body.order_id, store: store, client: client)
            return .json(
                LookupResponse(
                    orderID: body.order_id, gameID: client.gameID, order: result.order, ledger: result.ledger))
        } catch let error as StoreVerificationError {
            let (status, code) = errorTable(error.code)
            return failure(status, code, "\(error.reason): \(error.message)")
        } catch {
            return failure(502, "VERIFIER_ERROR", "unexpected error; safe to retry")
        }
    }

    /// The contract's lookup answer. It never says "failed": a transaction the gateway never saw is
    /// `gateway.found: false` with a reason; `last_error_*` say why a call for it was refused.
    struct LookupResponse: Encodable {
        let orderID: String
        let gameID: Int64?
        let order: StoreOrder
        let ledger: [String: LedgerPresence]

        enum Keys: String, CodingKey { case orderID = "order_id", gameID = "game_id", found, environment, transactions }
        enum EntryKeys: String, CodingKey { case transactionID = "transaction_id", productID = "product_id", gateway }
        enum GatewayKeys: String, CodingKey {
            case found, txMgmtID = "tx_mgmt_id", currentState = "current_state", lastErrorCode = "last_error_code"
            case lastErrorMessage = "last_error_message", recordedForThisGame = "recorded_for_this_game", reason
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(orderID, forKey: .orderID)
            try container.encode(gameID, forKey: .gameID)
            try container.encode(order.found, forKey: .found)
            try container.encode(
                order.environment.map { $0 == .production ? "Production" : "Sandbox" }, forKey: .environment)
            var list = container.nestedUnkeyedContainer(forKey: .transactions)
            for entry in order.entries {
                var item = list.nestedContainer(keyedBy: EntryKeys.self)
                try item.encode(entry.transactionID, forKey: .transactionID)
                try item.encode(entry.productID, forKey: .productID)
                var gateway = item.nestedContainer(keyedBy: GatewayKeys.self, forKey: .gateway)
                let presence = entry.transactionID.flatMap { ledger[$0] }
                let found = !entry.decodeFailed && presence?.found == true
                try gateway.encode(found, forKey: .found)
                try gateway.encode(presence?.managementID, forKey: .txMgmtID)
                try gateway.encode(presence?.state.map(Self.gatewayState), forKey: .currentState)
                // The last refused /verify of this transaction, as that call was answered.
                let refusal = presence?.lastRefusal
                try gateway.encode(refusal.map { AlogameGateway.errorTable($0.code).1 }, forKey: .lastErrorCode)
                try gateway.encode(refusal.map { "\($0.reason): \($0.message)" }, forKey: .lastErrorMessage)
                try gateway.encode(presence?.recordedForThisGame ?? false, forKey: .recordedForThisGame)
                if !found {
                    try gateway.encode(
                        entry.decodeFailed ? "DECODE_FAILED" : "NEVER_RECEIVED_BY_GATEWAY", forKey: .reason)
                }
            }
        }

        static func gatewayState(_ state: TransactionState) -> String {
            state == .active ? "gateway_verified" : state.rawValue
        }
    }

    // MARK: - Refund callback (Alogame → game server)

    /// The contract's body: `transaction_id`, `product_id`, `revocation_date` (epoch ms), `revocation_reason`
    /// (Apple's code), `game_id`. Signing and delivery are the core's outbox.
    struct RefundCallbacks: RefundCallbackRenderer {
        let format = "alogame"

        func refundCallbackBody(_ event: RefundEvent) throws -> Data {
            struct Body: Encodable {
                let event: RefundEvent
                enum Keys: String, CodingKey {
                    case transactionID = "transaction_id", productID = "product_id", revocationDate = "revocation_date"
                    case revocationReason = "revocation_reason", gameID = "game_id", revocationPercentage =
                        "revocation_percentage"
                }
                func encode(to encoder: any Encoder) throws {
                    var container = encoder.container(keyedBy: Keys.self)
                    try container.encode(event.transactionID, forKey: .transactionID)
                    try container.encode(event.productID, forKey: .productID)
                    try container.encode(event.revocationDate?.epochMilliseconds, forKey: .revocationDate)
                    try container.encode(event.revocationReasonCode, forKey: .revocationReason)
                    try container.encode(event.gameID, forKey: .gameID)
                    // Beyond the contract's body, and only for a partial refund: a full one reads as it always did.
                    try container.encodeIfPresent(event.partialPercentage, forKey: .revocationPercentage)
                }
            }
            // Throws instead of answering an error body, which would be queued and sent as the callback.
            return try RouteResponse.encodedJSON(Body(event: event))
        }
    }

    // MARK: - POST /iap/gateway/verify

    static func verify(_ request: RouteRequest, context: RouteContext, core: any DialectCore) async -> RouteResponse {
        guard let client = context.client else { return failure(401, "UNAUTHORIZED", "client authentication required") }
        let body: VerifyBody
        switch VerifyBody.parse(request.body) {
        case .success(let parsed): body = parsed
        case .failure(let refusal):
            let note = refusal.code == "INVALID_OS_ID" ? Self.unreachable(among: core.stores) : ""
            return failure(400, refusal.code, refusal.message + note)
        }
        // os_id names a device, not a store: the stores of its system, narrowed by the client's
        // apps and the receipt's form (`DialectCore.store(runningOn:client:evidence:)`).
        let system: OperatingSystem = Self.osIDs.first { $0.0 == body.osID }?.1 ?? .ios
        let store: StoreID
        do { store = try core.store(runningOn: system, client: client, evidence: body.receipt).store } catch {
            return failure(400, "INVALID_OS_ID", "os_id \(body.osID): \(error)")
        }
        var verification = VerificationRequest(store: store, evidence: body.receipt, requestID: context.requestID)
        verification.productID = body.productID
        verification.playerID = body.playerID
        verification.characterID = body.characterID
        verification.serverID = body.serverID
        verification.gameVersion = body.gameVersion
        do {
            let outcome = try await core.verify(verification, client: client)
            // Success means "deliver": never for a purchase that is refunded, revoked or over.
            guard outcome.transaction.state == .active else {
                return failure(
                    422, "VERIFICATION_FAILED",
                    "transaction \(outcome.transaction.transactionID) is \(outcome.transaction.state.rawValue)")
            }
            if outcome.duplicate {
                return failure(
                    409, "DUPLICATE_TRANSACTION",
                    "transaction \(outcome.transaction.transactionID) was already verified")
            }
            return .json(Success(transaction: outcome.transaction, platform: system.rawValue))
        } catch let error as StoreVerificationError {
            let (status, code) = errorTable(error.code)
            return failure(status, code, "\(error.reason): \(error.message)")
        } catch {
            return failure(502, "VERIFIER_ERROR", "unexpected error; safe to retry")
        }
    }

    /// The contract's error table: shared code → (HTTP status, this dialect's `error`).
    static func errorTable(_ code: ErrorCode) -> (Int, String) {
        switch code {
        case .duplicateTransaction: (409, "DUPLICATE_TRANSACTION")
        case .productMismatch: (422, "PRODUCT_MISMATCH")
        case .environmentMismatch: (412, "ENVIRONMENT_MISMATCH")
        case .verificationFailed, .bundleMismatch: (422, "VERIFICATION_FAILED")
        case .verifierError, .rateLimited: (502, "VERIFIER_ERROR")
        case .missingFields, .invalidField, .payloadTooLarge, .notFound: (400, "MISSING_FIELDS")
        case .unauthorized: (401, "UNAUTHORIZED")
        case .forbidden: (403, "FORBIDDEN")
        case .accountMismatch: (422, "ACCOUNT_MISMATCH")
        }
    }

    static func failure(_ status: Int, _ code: String, _ message: String) -> RouteResponse {
        .json(Failure(error: code, message: message), status: status)
    }

    struct Failure: Encodable {
        let success = false
        let error: String
        let message: String
    }

    /// The request body, read leniently as JSON so that every mistake gets the contract's code.
    struct VerifyBody {
        var receipt: String
        var productID: String
        var osID: Int
        var playerID: String?, characterID: String?, serverID: String?, gameVersion: String?

        struct Refusal: Error { let code: String; let message: String }

        private struct OSIDProbe: Decodable {
            let osID: Int?
            enum CodingKeys: String, CodingKey { case osID = "os_id" }
            init(from decoder: any Decoder) throws {
                osID = try? decoder.container(keyedBy: CodingKeys.self).decode(Int.self, forKey: .osID)
            }
        }

        static func parse(_ data: Data) -> Result<VerifyBody, Refusal> {
            guard let object = JSONValue(parsing: data)?.object else {
                return .failure(Refusal(code: "MISSING_FIELDS", message: "the body must be a JSON object"))
            }
            let missing = ["receipt", "product_id", "os_id"].filter { key in
                guard let value = object[key], !value.isNull else { return true }
                return value.string?.isEmpty == true
            }
            guard missing.isEmpty else {
                return .failure(
                    Refusal(
                        code: "MISSING_FIELDS", message: "missing required field(s): \(missing.joined(separator: ", "))"
                    ))
            }
            guard let receipt = object["receipt"]?.string, let productID = object["product_id"]?.string else {
                return .failure(Refusal(code: "MISSING_FIELDS", message: "receipt and product_id must be strings"))
            }
            if let problem = Identifier.problem(productID) {
                return .failure(Refusal(code: "MISSING_FIELDS", message: "product_id \(problem)"))
            }
            // Typed decoding, so a boolean, a string or a fraction is not taken for a number.
            guard let osID = (try? JSONDecoder().decode(OSIDProbe.self, from: data))?.osID, [1, 2].contains(osID) else {
                return .failure(Refusal(code: "INVALID_OS_ID", message: "os_id must be 1 (Android) or 2 (iOS)"))
            }
            var body = VerifyBody(receipt: receipt, productID: productID, osID: osID)
            for (key, path) in [
                ("player_id", \VerifyBody.playerID), ("character_id", \.characterID), ("server_id", \.serverID),
                ("game_version", \.gameVersion),
            ] {
                guard let value = object[key], !value.isNull else { continue }
                guard let text = value.string else {
                    return .failure(Refusal(code: "MISSING_FIELDS", message: "\(key) must be a string"))
                }
                if let problem = Identifier.problem(text) {
                    return .failure(Refusal(code: "MISSING_FIELDS", message: "\(key) \(problem)"))
                }
                body[keyPath: path] = text
            }
            return .success(body)
        }
    }

    /// The contract's success body. Every `receipt_info` field is present; SK1 leaves type,
    /// storefront, price, currency and in_app_ownership_type null.
    struct Success: Encodable {
        let transaction: TransactionRecord
        /// As the request's os_id said.
        let platform: String

        enum Keys: String, CodingKey {
            case success, transactionID = "transaction_id", productID = "product_id", receiptInfo = "receipt_info"
        }
        enum InfoKeys: String, CodingKey {
            case platform, environment, quantity, purchaseDateMs = "purchase_date_ms", originalTransactionID =
                "original_transaction_id"
            case type, storefront, price, currency, inAppOwnershipType = "in_app_ownership_type"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: Keys.self)
            try container.encode(true, forKey: .success)
            try container.encode(transaction.transactionID, forKey: .transactionID)
            try container.encode(transaction.productID, forKey: .productID)
            var info = container.nestedContainer(keyedBy: InfoKeys.self, forKey: .receiptInfo)
            try info.encode(platform, forKey: .platform)
            try info.encode(transaction.environment == .production ? "Production" : "Sandbox", forKey: .environment)
            try info.encode(transaction.quantity, forKey: .quantity)
            try info.encode(transaction.purchaseDate?.epochMilliseconds, forKey: .purchaseDateMs)
            try info.encode(transaction.originalTransactionID, forKey: .originalTransactionID)
            try info.encode(transaction.kind.map(Self.appleType), forKey: .type)
            try info.encode(transaction.storefront, forKey: .storefront)
            try info.encode(transaction.priceMilliunits, forKey: .price)
            try info.encode(transaction.currency, forKey: .currency)
            try info.encode(
                transaction.ownership.map { $0 == .familyShared ? "FAMILY_SHARED" : "PURCHASED" },
                forKey: .inAppOwnershipType)
        }

        static func appleType(_ kind: ProductKind) -> String {
            switch kind {
            case .consumable: "Consumable"
            case .nonConsumable: "Non-Consumable"
            case .autoRenewableSubscription: "Auto-Renewable Subscription"
            case .nonRenewingSubscription: "Non-Renewing Subscription"
            }
        }
    }
}
