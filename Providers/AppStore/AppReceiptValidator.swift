package import Foundation
package import HTTPClient
package import OpenSSLCrypto

/// A StoreKit 1 purchase Apple confirmed. SK1 says less than StoreKit 2: what it does not say
/// (price, currency, storefront, ownership...) stays nil unless the App Store Server API filled it.
package struct ConfirmedReceiptTransaction: Sendable, Equatable {
    package var environment: AppStoreEnvironment
    package var transactionID: String
    package var originalTransactionID: String?
    package var productID: String?
    package var quantity: Int64?
    package var purchaseDate: Date?
    package var expiresDate: Date?
    package var cancellationDate: Date?
    package var webOrderLineItemID: String?
    /// The signed transaction the App Store Server API returned for it (mode `.serverAPI`).
    package var signedTransaction: JWSTransactionDecodedPayload?
}

/// Proves a StoreKit 1 receipt genuine, in three steps, each before the next: its signature is
/// verified locally to a receipt root (`AppReceiptAuthenticator`); its bundle id (and, when it
/// says, its environment) must be the client's; only then is Apple asked, in one of two
/// configurable ways: the App Store Server API (preferred: the transactions that can answer the
/// request are looked up, at most `maxLookups` of them, and each signed answer verified locally)
/// or the legacy `verifyReceipt` endpoint with the app's shared secret (production first,
/// sandbox on 21007, production again on 21008).
package struct AppReceiptValidator: Sendable {
    package enum Mode: Sendable {
        case serverAPI(AppStoreServerAPIClient)
        case verifyReceipt(
            sharedSecret: String, productionURL: String = "https://buy.itunes.apple.com/verifyReceipt",
            sandboxURL: String = "https://sandbox.itunes.apple.com/verifyReceipt", http: HTTPClient)
    }

    /// How many transactions one receipt may make us look up with the App Store Server API.
    package static let defaultMaxLookups = 10

    package let mode: Mode
    package let verifier: AppStoreSignedDataVerifier
    package let authenticator: AppReceiptAuthenticator
    package var maxLookups = defaultMaxLookups

    /// `receiptTrustRoots`: the roots receipt signatures must chain to (Apple Root CA by default).
    package init(
        mode: Mode, verifier: AppStoreSignedDataVerifier,
        receiptTrustRoots: [Certificate] = AppleRootCertificates.defaultReceiptRoots,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.mode = mode
        self.verifier = verifier
        self.authenticator = AppReceiptAuthenticator(trustRoots: receiptTrustRoots, now: now)
    }

    /// `productID`: the product the caller asks about, if any (only its transactions are looked
    /// up, else only the most recent transaction); `transactionID`: the one transaction the caller
    /// names, looked up before any other. No lookup starts after `deadline` or once the task is
    /// cancelled.
    package func validate(
        _ base64Receipt: String, expecting expectations: AppStoreExpectations, productID: String? = nil,
        transactionID: String? = nil,
        deadline: ContinuousClock.Instant? = nil
    ) async throws(AppStoreVerificationError) -> [ConfirmedReceiptTransaction] {
        let receipt = try authenticator.authenticate(base64: base64Receipt)
        return try await confirm(
            receipt, base64Receipt: base64Receipt, expecting: expectations, productID: productID,
            transactionID: transactionID,
            deadline: deadline)
    }

    /// Steps two and three, for a receipt `AppReceiptAuthenticator` returned from `base64Receipt`.
    func confirm(
        _ receipt: AppReceipt, base64Receipt: String, expecting expectations: AppStoreExpectations, productID: String?,
        transactionID: String? = nil, deadline: ContinuousClock.Instant?
    ) async throws(AppStoreVerificationError) -> [ConfirmedReceiptTransaction] {
        try Self.checkIdentity(of: receipt, expecting: expectations)
        try Self.checkTimeLeft(before: "asking Apple", deadline: deadline)
        switch mode {
        case .serverAPI(let client):
            return try await confirmWithServerAPI(
                receipt, client: client, expectations: expectations, productID: productID, transactionID: transactionID,
                deadline: deadline)
        case .verifyReceipt(let secret, let production, let sandbox, let http):
            return try await confirmWithVerifyReceipt(
                base64Receipt, secret: secret, production: production, sandbox: sandbox,
                http: http, expectations: expectations)
        }
    }

    /// Throws a retryable `.storeUnavailable` once the task is cancelled or the deadline has passed.
    static func checkTimeLeft(before step: String, deadline: ContinuousClock.Instant?) throws(AppStoreVerificationError)
    {
        if Task.isCancelled || deadline.map({ ContinuousClock.now >= $0 }) == true {
            throw AppStoreVerificationError(.storeUnavailable, "the request ended before \(step)")
        }
    }

    /// The authenticated receipt's bundle id must be the client's, and its environment too when it names one.
    static func checkIdentity(
        of receipt: AppReceipt, expecting expectations: AppStoreExpectations
    ) throws(AppStoreVerificationError) {
        guard let bundle = receipt.bundleID, expectations.bundleIDs.contains(bundle) else {
            throw AppStoreVerificationError(
                .bundleMismatch, "receipt bundle id \(receipt.bundleID ?? "(none)") is not registered for this client")
        }
        if let environment = receipt.environment, !expectations.environments.contains(environment) {
            throw AppStoreVerificationError(.environmentMismatch, "receipt is from \(environment.rawValue)")
        }
    }

    // MARK: - verifyReceipt (legacy)

    struct VerifyReceiptResponse: Decodable {
        struct Receipt: Decodable {
            let bundle_id: String?
            let in_app: [InApp]?
        }
        struct InApp: Decodable {
            let quantity: String?
            let product_id: String?
            let transaction_id: String?
            let original_transaction_id: String?
            let purchase_date_ms: String?
            let expires_date_ms: String?
            let cancellation_date_ms: String?
            let web_order_line_item_id: String?
        }
        let status: Int
        let environment: String?
        let receipt: Receipt?
    }

    private func confirmWithVerifyReceipt(
        _ base64Receipt: String, secret: String, production: String, sandbox: String, http: HTTPClient,
        expectations: AppStoreExpectations
    ) async throws(AppStoreVerificationError) -> [ConfirmedReceiptTransaction] {
        var response = try await postVerifyReceipt(base64Receipt, secret: secret, url: production, http: http)
        if response.status == 21007 {
            response = try await postVerifyReceipt(base64Receipt, secret: secret, url: sandbox, http: http)
        } else if response.status == 21008 {
            response = try await postVerifyReceipt(base64Receipt, secret: secret, url: production, http: http)
        }
        if let failure = Self.verifyReceiptFailure(status: response.status) { throw failure }
        let environment: AppStoreEnvironment = response.environment == "Sandbox" ? .sandbox : .production
        guard let bundle = response.receipt?.bundle_id, expectations.bundleIDs.contains(bundle) else {
            throw AppStoreVerificationError(
                .bundleMismatch, "Apple reports bundle id \(response.receipt?.bundle_id ?? "(none)")")
        }
        guard expectations.environments.contains(environment) else {
            throw AppStoreVerificationError(.environmentMismatch, "receipt is from \(environment.rawValue)")
        }
        return (response.receipt?.in_app ?? []).compactMap { item in
            guard let id = item.transaction_id else { return nil }
            func date(_ ms: String?) -> Date? { ms.flatMap(Double.init).map { Date(timeIntervalSince1970: $0 / 1000) } }
            return ConfirmedReceiptTransaction(
                environment: environment, transactionID: id, originalTransactionID: item.original_transaction_id,
                productID: item.product_id, quantity: item.quantity.flatMap { Int64($0) },
                purchaseDate: date(item.purchase_date_ms),
                expiresDate: date(item.expires_date_ms), cancellationDate: date(item.cancellation_date_ms),
                webOrderLineItemID: item.web_order_line_item_id, signedTransaction: nil)
        }
    }

    private func postVerifyReceipt(
        _ receipt: String, secret: String, url: String, http: HTTPClient
    ) async throws(AppStoreVerificationError) -> VerifyReceiptResponse {
        struct Request: Encodable {
            let receiptData: String, password: String, excludeOldTransactions: Bool
            enum CodingKeys: String, CodingKey {
                case receiptData = "receipt-data", password, excludeOldTransactions = "exclude-old-transactions"
            }
        }
        let body: Data
        do {
            body = try JSONEncoder().encode(
                Request(receiptData: receipt, password: secret, excludeOldTransactions: false))
        } catch {
            // The error would quote the values it failed on, the shared secret among them.
            throw AppStoreVerificationError(
                .requestNotEncodable, "the verifyReceipt request could not be encoded; nothing was sent")
        }
        let response: HTTPClient.Response
        do {
            response = try await http.send(
                .init(method: "POST", url: url, headers: [("Content-Type", "application/json")], body: body))
        } catch {
            throw AppStoreVerificationError(.storeUnavailable, "verifyReceipt unreachable: \(error)")
        }
        guard response.status == 200,
            let decoded = try? JSONDecoder().decode(VerifyReceiptResponse.self, from: response.body)
        else {
            throw AppStoreVerificationError(.storeUnavailable, "verifyReceipt answered HTTP \(response.status)")
        }
        return decoded
    }

    /// verifyReceipt's status codes, mapped to our reasons. nil means the receipt is valid
    /// (21006: valid, but the subscription it shows has expired).
    static func verifyReceiptFailure(status: Int) -> AppStoreVerificationError? {
        switch status {
        case 0, 21006: return nil
        case 21004:
            return AppStoreVerificationError(.misconfigured, "verifyReceipt: the shared secret does not match (21004)")
        case 21005, 21009, 21100...21199:
            return AppStoreVerificationError(.storeUnavailable, "verifyReceipt: Apple is unavailable (\(status))")
        case 21007, 21008:
            return AppStoreVerificationError(
                .receiptNotConfirmed, "verifyReceipt: environment ping-pong did not settle (\(status))")
        default: return AppStoreVerificationError(.receiptNotConfirmed, "verifyReceipt refused the receipt (\(status))")
        }
    }
}
