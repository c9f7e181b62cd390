import Foundation
import OpenSSLCrypto
public import ReceiptCore

extension HuaweiAppGalleryProvider {
    /// Proves a purchase token with Huawei and normalizes the answer: a subscription (the
    /// evidence's `kind` 2 or a subscription id) from the subscription service, anything else from
    /// the order service by its product id. Throws `StoreVerificationError`.
    public func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
        var parsed: HuaweiEvidence
        do { parsed = try HuaweiEvidence.parse(evidence) } catch {
            throw StoreVerificationError(code: .verificationFailed, reason: "MALFORMED_RECEIPT", message: "\(error)")
        }
        if let named = parsed.packageName, !context.appIdentifiers.contains(named) {
            throw Self.packageMismatch(named)
        }
        if let requested = context.productID, let claimed = parsed.productID, requested != claimed {
            throw StoreVerificationError(
                code: .productMismatch, reason: "PRODUCT_MISMATCH",
                message: "the purchase data is for \(claimed), the request asks about \(requested)")
        }
        if let field = context.evidenceFields[Self.subscriptionIDField.name], !field.isEmpty {
            parsed.subscriptionID = field
            if parsed.kind == nil { parsed.kind = 2 }
        }
        let purchase: VerifiedPurchase
        do {
            let access = try Self.access(client: context.client, credentials: context.credentials)
            purchase = try await fetch(
                parsed, productID: context.productID ?? parsed.productID, access: access,
                registered: context.appIdentifiers, lenient: false, deadline: context.deadline)
        } catch let error as StoreAPIError {
            if error.kind == .credentialsRefused || error.kind == .notConfigured {
                logger.error(
                    "Huawei IAP cannot be asked for this client; the operator must fix its app id, secret or IAP key",
                    ["client.id": context.client?.clientID ?? "", "problem": error.message])
            }
            throw error.verificationError
        }
        return [purchase]
    }

    /// Reads the purchase from the site Huawei documents for it, checks the signature of the
    /// signed data before anything in it is read, then its token, package and product. `lenient`
    /// (notifications, read-backs, the cancelled list) keeps a canceled purchase as news of its
    /// revocation instead of refusing it; an unfinished one is refused either way. `site` is
    /// where the purchase is already known to be (a read-back key, the site that listed it);
    /// `revokedAt` the time a revocation is dated when Huawei's data gives none (else now).
    /// Throws `StoreAPIError` or `StoreVerificationError`.
    func fetch(
        _ evidence: HuaweiEvidence, productID: String?, access: Access, registered: Set<String>, lenient: Bool,
        deadline: ContinuousClock.Instant?, site known: HuaweiSite? = nil, revokedAt: Date? = nil
    ) async throws -> VerifiedPurchase {
        let site = known ?? HuaweiSite.forPurchase(accountFlag: evidence.accountFlag, country: evidence.country)
        let token = evidence.purchaseToken
        let signed: HuaweiOrderClient.Signed
        if evidence.isSubscription {
            guard let subscriptionID = evidence.subscriptionID, !subscriptionID.isEmpty else {
                throw StoreVerificationError(
                    code: .missingFields, reason: "SUBSCRIPTION_ID_REQUIRED",
                    message:
                        "a Huawei subscription is read by its subscription id: send \(Self.subscriptionIDField.name), "
                        + "or the InAppPurchaseData JSON as the receipt")
            }
            signed = try await api.subscription(
                token, subscriptionID: subscriptionID, site: site, app: access.app, deadline: deadline)
        } else {
            guard let productID, !productID.isEmpty else {
                throw StoreVerificationError(
                    code: .missingFields, reason: "PRODUCT_ID_REQUIRED",
                    message: "Huawei verifies a purchase token with its product id: send product_id")
            }
            signed = try await api.verifyToken(
                token, productID: productID, site: site, app: access.app, deadline: deadline)
        }
        let data = try Self.proven(signed, key: access.key)
        if let answered = data.purchaseToken, answered != token {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "TOKEN_MISMATCH",
                message: "Huawei's purchase data is for another purchase token")
        }
        guard let package = data.packageName, registered.contains(package) else {
            throw Self.packageMismatch(data.packageName ?? "no package")
        }
        if let productID, let answered = data.productId, answered != productID {
            throw StoreVerificationError(
                code: .productMismatch, reason: "PRODUCT_MISMATCH",
                message: "Huawei says the purchase is for \(answered), the request asks about \(productID)")
        }
        if data.typedKind == .subscription || evidence.isSubscription {
            return try Self.normalizeSubscription(
                data, token: token, site: site, lenient: lenient, now: revokedAt ?? now(),
                askedSubscriptionID: evidence.subscriptionID)
        }
        return try Self.normalize(data, token: token, site: site, lenient: lenient, now: revokedAt ?? now())
    }

    /// The signed purchase data, decoded only once its signature matched the app's IAP key.
    static func proven(
        _ signed: HuaweiOrderClient.Signed, key: HuaweiIAPKey
    ) throws(StoreAPIError) -> InAppPurchaseData {
        guard key.isValid(signature: signed.signature, for: signed.data, algorithm: signed.algorithm) else {
            throw HuaweiAPIErrors.forged()
        }
        do { return try JSONDecoder().decode(InAppPurchaseData.self, from: Data(signed.data.utf8)) } catch {
            throw HuaweiAPIErrors.malformed("Huawei's signed purchase data is not InAppPurchaseData JSON")
        }
    }

    static func packageMismatch(_ package: String) -> StoreVerificationError {
        StoreVerificationError(
            code: .bundleMismatch, reason: "PACKAGE_MISMATCH",
            message: "the purchase is for \(package), not a package name of this client")
    }
}
