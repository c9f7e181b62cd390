import Foundation

/// A signed App Store payload: it names the date its certificates are judged at.
public protocol AppStoreSignedPayload {
    /// `signedDate`, or for an app transaction `receiptCreationDate`.
    var signingDate: AppStoreDate? { get }
}

extension JWSTransactionDecodedPayload: AppStoreSignedPayload { public var signingDate: AppStoreDate? { signedDate } }
extension JWSRenewalInfoDecodedPayload: AppStoreSignedPayload { public var signingDate: AppStoreDate? { signedDate } }
extension ResponseBodyV2DecodedPayload: AppStoreSignedPayload { public var signingDate: AppStoreDate? { signedDate } }
extension AppTransaction: AppStoreSignedPayload { public var signingDate: AppStoreDate? { receiptCreationDate } }

/// A StoreKit 2 transaction (JWSTransactionDecodedPayload). Every field is optional: the payload
/// is Apple's, and older or newer versions leave out or add fields. It is decoded on every
/// verification, by hand only (`init(jsonPayload:)`); notifications encode it for the ledger.
public struct JWSTransactionDecodedPayload: Encodable, Hashable, Sendable {
    public var originalTransactionId: String?
    public var transactionId: String?
    public var webOrderLineItemId: String?
    public var bundleId: String?
    public var productId: String?
    public var subscriptionGroupIdentifier: String?
    public var purchaseDate: AppStoreDate?
    public var originalPurchaseDate: AppStoreDate?
    public var expiresDate: AppStoreDate?
    public var quantity: Int?
    public var type: TransactionType?
    public var appAccountToken: String?
    public var inAppOwnershipType: InAppOwnershipType?
    public var signedDate: AppStoreDate?
    public var revocationReason: RevocationReason?
    public var revocationDate: AppStoreDate?
    public var isUpgraded: Bool?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var environment: AppStoreEnvironment?
    public var storefront: String?
    public var storefrontId: String?
    public var transactionReason: TransactionReason?
    public var currency: String?
    /// Price in milliunits of `currency`.
    public var price: Int64?
    public var offerDiscountType: OfferDiscountType?
    public var appTransactionId: String?
    public var offerPeriod: String?

    public init() {}
}

/// Subscription renewal information (JWSRenewalInfoDecodedPayload).
public struct JWSRenewalInfoDecodedPayload: Codable, Hashable, Sendable {
    public var expirationIntent: ExpirationIntent?
    public var originalTransactionId: String?
    public var autoRenewProductId: String?
    public var productId: String?
    public var autoRenewStatus: AutoRenewStatus?
    public var isInBillingRetryPeriod: Bool?
    public var priceIncreaseStatus: PriceIncreaseStatus?
    public var gracePeriodExpiresDate: AppStoreDate?
    public var offerType: OfferType?
    public var offerIdentifier: String?
    public var signedDate: AppStoreDate?
    public var environment: AppStoreEnvironment?
    public var recentSubscriptionStartDate: AppStoreDate?
    public var renewalDate: AppStoreDate?
    public var currency: String?
    public var renewalPrice: Int64?
    public var offerDiscountType: OfferDiscountType?
    public var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    public var appTransactionId: String?
    public var offerPeriod: String?

    public init() {}
}

/// An App Store Server Notification V2 (ResponseBodyV2DecodedPayload).
public struct ResponseBodyV2DecodedPayload: Codable, Hashable, Sendable {
    public struct NotificationData: Codable, Hashable, Sendable {
        public var environment: AppStoreEnvironment?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var bundleVersion: String?
        public var signedTransactionInfo: String?
        public var signedRenewalInfo: String?
        public var status: SubscriptionStatus?
        public var consumptionRequestReason: String?

        public init() {}
    }

    public struct Summary: Codable, Hashable, Sendable {
        public var environment: AppStoreEnvironment?
        public var appAppleId: Int64?
        public var bundleId: String?
        public var productId: String?
        public var requestIdentifier: String?
        public var storefrontCountryCodes: [String]?
        public var succeededCount: Int64?
        public var failedCount: Int64?

        public init() {}
    }

    public struct ExternalPurchaseToken: Codable, Hashable, Sendable {
        public var externalPurchaseId: String?
        public var tokenCreationDate: AppStoreDate?
        public var appAppleId: Int64?
        public var bundleId: String?

        public init() {}
    }

    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    public var notificationUUID: String?
    public var data: NotificationData?
    public var version: String?
    public var signedDate: AppStoreDate?
    public var summary: Summary?
    public var externalPurchaseToken: ExternalPurchaseToken?

    public init() {}

    /// The app and environment the notification speaks for, wherever Apple put them.
    var identity: (bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?) {
        if let data { return (data.bundleId, data.appAppleId, data.environment) }
        if let summary { return (summary.bundleId, summary.appAppleId, summary.environment) }
        if let token = externalPurchaseToken {
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") == true
            return (token.bundleId, token.appAppleId, sandbox ? .sandbox : .production)
        }
        return (nil, nil, nil)
    }
}

/// The signed app transaction (AppTransaction): proof the app itself was bought or downloaded.
public struct AppTransaction: Codable, Hashable, Sendable {
    public var receiptType: AppStoreEnvironment?
    public var appAppleId: Int64?
    public var bundleId: String?
    public var applicationVersion: String?
    public var versionExternalIdentifier: Int64?
    public var receiptCreationDate: AppStoreDate?
    public var originalPurchaseDate: AppStoreDate?
    public var originalApplicationVersion: String?
    public var deviceVerification: String?
    public var deviceVerificationNonce: String?
    public var preorderDate: AppStoreDate?
    public var appTransactionId: String?
    public var originalPlatform: String?

    public init() {}
}
