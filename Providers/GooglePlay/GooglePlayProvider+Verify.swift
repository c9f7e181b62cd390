import Foundation
import OpenSSLCrypto
public import ReceiptCore

extension GooglePlayProvider {
    /// Proves a purchase token (bare, in a purchase JSON, or in a Unity receipt) with Google and
    /// normalizes the answer. Throws `StoreVerificationError`.
    public func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
        let parsed: GooglePlayEvidence
        do { parsed = try GooglePlayEvidence.parse(evidence) } catch {
            throw StoreVerificationError(code: .verificationFailed, reason: "MALFORMED_RECEIPT", message: "\(error)")
        }
        let package = try Self.packageName(parsed, registered: context.appIdentifiers)
        try checkLicenseSignature(parsed, client: context.client)
        let purchase: VerifiedPurchase
        do {
            let key = try serviceAccountKey(context.credentials)
            purchase = try await fetch(
                parsed, package: package, key: key, consume: context.client?.setting(Setting.consume) == "on",
                client: context.client?.clientID)
        } catch let error as StoreAPIError {
            if error.kind == .credentialsRefused || error.kind == .notConfigured {
                logger.error(
                    "Google Play refused or cannot be asked; the operator must fix the service account",
                    ["client.id": context.client?.clientID ?? "", "package": package, "problem": error.message])
            }
            throw error.verificationError
        }
        if let claimed = parsed.orderID, purchase.storeAttributes["product_type"] == "product",
            let real = purchase.orderID, claimed != real
        {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "ORDER_MISMATCH",
                message: "the purchase json names order \(claimed), Google says \(real)")
        }
        return [purchase]
    }

    /// The evidence's package, else the request's (the only one left in `registered`), else the
    /// client's only package; always one the client registered.
    static func packageName(_ evidence: GooglePlayEvidence, registered: Set<String>) throws -> String {
        if let named = evidence.packageName {
            guard registered.contains(named) else {
                throw StoreVerificationError(
                    code: .bundleMismatch, reason: "PACKAGE_MISMATCH",
                    message: "the purchase is for \(named), not a package name of this client")
            }
            return named
        }
        guard registered.count == 1, let only = registered.first else {
            throw StoreVerificationError(
                code: .missingFields, reason: "PACKAGE_NAME_REQUIRED",
                message: "a bare purchase token does not name its app and this client has several package names; "
                    + "send package_name")
        }
        return only
    }

    /// With a purchase JSON, its signature and the client's Play licensing key, a forged JSON is
    /// refused here, without asking Google. Google's answer stays authoritative either way.
    func checkLicenseSignature(_ evidence: GooglePlayEvidence, client: ClientInfo?) throws {
        guard let encoded = client?.setting(Setting.licenseKey), let signed = evidence.signedJSON,
            let signature = evidence.signature
        else { return }
        guard let der = Base64.decodeLenient(encoded), let key = try? PublicKey(subjectPublicKeyInfo: der), key.isRSA
        else {
            throw StoreVerificationError(
                code: .verifierError, reason: "LICENSE_KEY_INVALID",
                message: "the client's Google Play licensing key is not a base64 RSA public key")
        }
        guard let raw = Base64.decodeLenient(signature), key.isValidSHA1WithRSA(signature: raw, for: signed) else {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "INVALID_SIGNATURE",
                message: "the purchase json's signature does not match the app's licensing key")
        }
    }

    /// One-time product first (`purchases.productsv2`, the line item the evidence names), then
    /// subscription; a subscription purchase JSON goes straight to subscriptions. Throws
    /// `StoreAPIError`, or `StoreVerificationError` for a pending or canceled purchase.
    func fetch(
        _ evidence: GooglePlayEvidence, package: String, key: ServiceAccountKey, consume: Bool, client: String?,
        lenient: Bool = false
    ) async throws -> VerifiedPurchase {
        let token = evidence.purchaseToken
        if evidence.isSubscription != true {
            do {
                let product = try await api.productPurchaseV2(package: package, token: token, key: key)
                return try await oneTimePurchase(
                    product, package: package, token: token, productID: evidence.productID, key: key, consume: consume,
                    client: client, lenient: lenient)
            } catch let error as StoreAPIError where error.kind == .notFound || error.kind == .refused {
                // Not a one-time product of this app: perhaps a subscription.
            }
        }
        return try await subscription(
            package: package, token: token, productID: evidence.productID, key: key, lenient: lenient)
    }

    /// A `productsv2` purchase normalized, a rental's period read from the catalog first.
    func oneTimePurchase(
        _ product: ProductPurchaseV2, package: String, token: String, productID: String?, key: ServiceAccountKey,
        consume: Bool, client: String?, lenient: Bool
    ) async throws -> VerifiedPurchase {
        var rentalPeriod: String?
        if let item = Self.lineItem(product, productID: productID), item.productOfferDetails?.rentOfferDetails != nil,
            let option = item.productOfferDetails?.purchaseOptionId, let rented = item.productId
        {
            do {
                rentalPeriod = try await rentals.period(
                    of: option, productID: rented, package: package, client: client, key: key)
            } catch let error as StoreAPIError where error.kind == .notFound || error.kind == .refused {
                // The product is gone from the catalog: the rental's end cannot be known, which
                // `normalize` refuses (never a rental without an end, never "not a product").
                rentalPeriod = nil
            }
        }
        return try Self.normalize(
            product, package: package, token: token, productID: productID, consume: consume, lenient: lenient,
            rentalPeriod: rentalPeriod)
    }
}
