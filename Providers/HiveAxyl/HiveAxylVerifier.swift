import Foundation
import ReceiptCore

/// One verify request: the caller's app id checked, the body read, the receipt proven and
/// recorded by the core, and the answer read back from the ledger (so a refund or renewal the
/// ledger learned from a store notification shows, not only what the receipt says).
struct HiveAxylVerifier {
    let core: any DialectCore
    let request: RouteRequest
    let context: RouteContext

    static let maxReceiptLength = 1_048_576
    static let maxIDLength = 256

    // MARK: - POST /payment/v1/purchase/verify

    func purchase() async -> RouteResponse {
        await answer { client in
            let body = try Self.body(
                request.body, required: ["providerId", "axylReceipt", "productId", "accountUuid", "requestType"])
            let store = try body.store(core: core)
            var verification = VerificationRequest(
                store: store.store, evidence: try body.requiredString("axylReceipt", maxLength: Self.maxReceiptLength),
                requestID: context.requestID)
            verification.evidenceFields = try body.evidenceFields(for: store)
            verification.productID = try body.requiredString("productId", maxLength: Self.maxIDLength)
            verification.accountToken = try body.requiredString("accountUuid", maxLength: Self.maxIDLength)
            _ = try body.requestType()
            verification.playerID = try body.string("playerId", maxLength: Self.maxIDLength, numbersAllowed: true)
            verification.serverID = try body.string("serverId", maxLength: Self.maxIDLength, numbersAllowed: true)
            // Accepted for compatibility; productId is what the receipt is checked against.
            _ = try body.string("marketPid", maxLength: Self.maxIDLength, numbersAllowed: true)

            let proven = try await core.prove(verification, client: client)
            // Checked before recording: a receipt sent to the wrong route leaves no trace in the ledger.
            guard !Self.isSubscription(proven.purchase) else {
                throw HiveAxylResult.invalid(
                    "axylReceipt is an auto-renewable subscription; verify it with POST /payment/v1/subscription/verify"
                )
            }
            let outcome = try await core.record(proven, client: client)  // no effects: may share a commit
            let recorded = outcome.transaction
            // The ledger's word now: a refund learned from a store notification shows here.
            let current =
                try await core.transaction(store: recorded.store, transactionID: recorded.transactionID, client: client)
                .flatMap { $0.environment == recorded.environment ? $0 : nil } ?? recorded
            return HiveAxylResult.success(
                HiveAxylPurchaseData(
                    transaction: current, duplicate: outcome.duplicate, accountMatch: outcome.accountMatch))
        }
    }

    // MARK: - POST /payment/v1/subscription/verify

    func subscription() async -> RouteResponse {
        await answer { client in
            let (verification, storeTransactionID) = try subscriptionRequest()
            let proven = try await core.prove(verification, client: client)
            guard Self.isSubscription(proven.purchase) else {
                throw HiveAxylResult.invalid(
                    "axylReceipt is not an auto-renewable subscription; verify it with POST /payment/v1/purchase/verify"
                )
            }
            if let storeTransactionID, !storeTransactionID.isEmpty, !Self.names(proven.purchase, storeTransactionID) {
                throw HiveAxylResult.invalid(
                    "storeTransactionId \(storeTransactionID) is not a transaction of this receipt")
            }
            let outcome = try await core.record(proven, client: client)  // no effects: may share a commit
            let recorded = outcome.transaction
            // The latest period the ledger knows (a renewal or refund from a store notification), not the JWS's.
            let ledger = try await core.subscription(
                store: recorded.store, originalTransactionID: recorded.originalOrSelf, client: client
            )
            .flatMap { $0.environment == recorded.environment ? $0 : nil }
            let state = ledger ?? outcome.subscription ?? Self.subscriptionState(of: recorded)
            return HiveAxylResult.success(
                HiveAxylSubscriptionData(
                    state: state, transaction: recorded, duplicate: outcome.duplicate,
                    accountMatch: outcome.accountMatch))
        }
    }

    /// The subscription body, checked field by field as the contract lists them, and the
    /// `storeTransactionId` the caller named.
    private func subscriptionRequest() throws -> (VerificationRequest, String?) {
        let body = try Self.body(
            request.body, required: ["providerId", "axylReceipt", "accountUuid", "country", "language", "requestType"])
        let store = try body.store(core: core)
        let receipt = try body.requiredString("axylReceipt", maxLength: Self.maxReceiptLength)
        var verification = VerificationRequest(store: store.store, evidence: receipt, requestID: context.requestID)
        verification.evidenceFields = try body.evidenceFields(for: store)
        verification.accountToken = try body.requiredString("accountUuid", maxLength: Self.maxIDLength)
        let country = try body.requiredString("country", maxLength: 8)
        guard ISOCodes.isCountry(country) else {
            throw HiveAxylResult.invalid("country must be an ISO 3166-1 alpha-2 code (e.g. KR, US), got \"\(country)\"")
        }
        let language = try body.requiredString("language", maxLength: 8)
        guard ISOCodes.isLanguage(language) else {
            throw HiveAxylResult.invalid("language must be an ISO 639-1 code (e.g. ko, en), got \"\(language)\"")
        }
        _ = try body.requestType()
        let storeTransactionID = try body.string(
            "storeTransactionId", maxLength: Self.maxIDLength, numbersAllowed: true)
        // A bare purchase token stands for a whole subscription, not one of its orders; a signed
        // transaction or a purchase JSON names its order.
        if store.evidenceShapes.contains(.purchaseToken), storeTransactionID?.isEmpty ?? true,
            EvidenceShape.forms(of: receipt).contains(.purchaseToken)
        {
            throw HiveAxylResult.invalid(
                "storeTransactionId is required with a bare \(store.displayName) purchase token")
        }
        return (verification, storeTransactionID)
    }

    // MARK: - Shared

    /// The app id check, then the handler; every failure in the envelope, never a 5xx for a
    /// client's mistake or a forged receipt.
    private func answer(_ handle: (ClientInfo) async throws -> RouteResponse) async -> RouteResponse {
        do {
            guard let client = context.client else {
                throw HiveAxylResult.unauthorized("a valid bearer access token is required")
            }
            try Self.checkAppID(request.headers["x-app-id"], client: client)
            return try await handle(client)
        } catch let result as HiveAxylResult {
            return result.response
        } catch let error as StoreVerificationError {
            return HiveAxylResult.from(error).response
        } catch {
            context.logger.error(
                "verification unavailable", ["request.id": context.requestID, "error": "\(type(of: error))"])
            return HiveAxylResult.unavailable.response
        }
    }

    /// `X-App-Id` must be one of the app ids registered for the token's client (`--app-id`).
    static func checkAppID(_ header: String?, client: ClientInfo) throws(HiveAxylResult) {
        guard let appID = header?.trimmingCharacters(in: .whitespaces), !appID.isEmpty else {
            throw .forbidden("X-App-Id header is required")
        }
        guard client.settings[HiveAxyl.appIDsSetting]?.contains(appID) == true else {
            throw .forbidden("X-App-Id \"\(appID.prefix(128))\" is not an app id of this client")
        }
    }

    static func body(_ data: Data, required: [String]) throws(HiveAxylResult) -> HiveAxylBody {
        guard let body = HiveAxylBody(data) else { throw .invalid("the body must be a JSON object") }
        let missing = body.missing(required)
        guard missing.isEmpty else { throw .invalid("missing required field(s): \(missing.joined(separator: ", "))") }
        return body
    }

    /// Auto-renewable subscriptions go to the subscription route; everything else is a purchase.
    /// Evidence that does not name its type (a StoreKit 1 receipt entry) is a subscription when
    /// it expires.
    static func isSubscription(_ purchase: VerifiedPurchase) -> Bool {
        purchase.kind == .autoRenewableSubscription || (purchase.kind == nil && purchase.expiresDate != nil)
    }

    /// Whether the caller's `storeTransactionId` is this purchase: its transaction, its original
    /// transaction or its order, or the order a Google renewal (`GPA.x..N`) continues.
    static func names(_ purchase: VerifiedPurchase, _ id: String) -> Bool {
        [purchase.transactionID, purchase.originalTransactionID, purchase.orderID].contains(id)
            || purchase.transactionID.hasPrefix(id + "..")
    }

    /// A subscription as its one transaction describes it, when the ledger has no row for it.
    static func subscriptionState(of transaction: TransactionRecord) -> SubscriptionState {
        var state = SubscriptionState(
            store: transaction.store, environment: transaction.environment,
            originalTransactionID: transaction.originalOrSelf, status: SubscriptionStatus(transaction.state))
        state.productID = transaction.productID
        state.expiresDate = transaction.expiresDate
        state.revocationDate = transaction.revocationDate
        state.latestTransactionID = transaction.transactionID
        return state
    }
}
