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
    package var originalTransactionId: String?
    package var transactionId: String?
    package var webOrderLineItemId: String?
    package var bundleId: String?
    public var productId: String?
    package var subscriptionGroupIdentifier: String?
    public var purchaseDate: AppStoreDate?
    package var originalPurchaseDate: AppStoreDate?
    public var expiresDate: AppStoreDate?
    public var quantity: Int?
    public var type: TransactionType?
    public var appAccountToken: String?
    public var inAppOwnershipType: InAppOwnershipType?
    public var signedDate: AppStoreDate?
    public var revocationReason: RevocationReason?
    public var revocationDate: AppStoreDate?
    package var revocationType: RevocationType?
    /// The share refunded or revoked, in milliunits of a percent (50000 is 50 %).
    package var revocationPercentage: Int?
    package var isUpgraded: Bool?
    package var offerType: OfferType?
    package var offerIdentifier: String?
    public var environment: AppStoreEnvironment?
    public var storefront: String?
    package var storefrontId: String?
    package var transactionReason: TransactionReason?
    public var currency: String?
    /// Price in milliunits of `currency`.
    public var price: Int64?
    package var offerDiscountType: OfferDiscountType?
    package var appTransactionId: String?
    package var offerPeriod: String?
    package var advancedCommerceInfo: AdvancedCommerceTransactionInfo?
    package var billingPlanType: BillingPlanType?
    package var commitmentInfo: TransactionCommitmentInfo?

    public init() {}
}

/// Subscription renewal information (JWSRenewalInfoDecodedPayload).
public struct JWSRenewalInfoDecodedPayload: Codable, Hashable, Sendable {
    package var expirationIntent: ExpirationIntent?
    package var originalTransactionId: String?
    package var autoRenewProductId: String?
    public var productId: String?
    package var autoRenewStatus: AutoRenewStatus?
    package var isInBillingRetryPeriod: Bool?
    package var priceIncreaseStatus: PriceIncreaseStatus?
    package var gracePeriodExpiresDate: AppStoreDate?
    package var offerType: OfferType?
    package var offerIdentifier: String?
    public var signedDate: AppStoreDate?
    public var environment: AppStoreEnvironment?
    package var recentSubscriptionStartDate: AppStoreDate?
    public var renewalDate: AppStoreDate?
    public var currency: String?
    package var renewalPrice: Int64?
    package var offerDiscountType: OfferDiscountType?
    package var eligibleWinBackOfferIds: [String]?
    public var appAccountToken: String?
    package var appTransactionId: String?
    package var offerPeriod: String?
    package var advancedCommerceInfo: AdvancedCommerceRenewalInfo?
    /// How the subscription is billed from its next renewal.
    package var renewalBillingPlanType: BillingPlanType?
    package var commitmentInfo: RenewalCommitmentInfo?

    package init() {}
}

/// An App Store Server Notification V2 (ResponseBodyV2DecodedPayload).
public struct ResponseBodyV2DecodedPayload: Codable, Hashable, Sendable {
    public struct NotificationData: Codable, Hashable, Sendable {
        public var environment: AppStoreEnvironment?
        package var appAppleId: Int64?
        package var bundleId: String?
        package var bundleVersion: String?
        package var signedTransactionInfo: String?
        package var signedRenewalInfo: String?
        public var status: SubscriptionStatus?
        package var consumptionRequestReason: String?

        package init() {}
    }

    public struct Summary: Codable, Hashable, Sendable {
        public var environment: AppStoreEnvironment?
        package var appAppleId: Int64?
        package var bundleId: String?
        public var productId: String?
        package var requestIdentifier: String?
        package var storefrontCountryCodes: [String]?
        package var succeededCount: Int64?
        package var failedCount: Int64?

        package init() {}
    }

    package struct ExternalPurchaseToken: Codable, Hashable, Sendable {
        package var externalPurchaseId: String?
        package var tokenCreationDate: AppStoreDate?
        package var appAppleId: Int64?
        package var bundleId: String?

        package init() {}
    }

    public var notificationType: NotificationType?
    public var subtype: NotificationSubtype?
    package var notificationUUID: String?
    public var data: NotificationData?
    public var version: String?
    public var signedDate: AppStoreDate?
    public var summary: Summary?
    package var externalPurchaseToken: ExternalPurchaseToken?
    /// In place of `data` where a notification is about the buyer's account in the app.
    package var appData: AppData?

    package init() {}

    /// The app and environment the notification speaks for, wherever Apple put them.
    var identity: (bundleId: String?, appAppleId: Int64?, environment: AppStoreEnvironment?) {
        if let data { return (data.bundleId, data.appAppleId, data.environment) }
        if let summary { return (summary.bundleId, summary.appAppleId, summary.environment) }
        if let token = externalPurchaseToken {
            let sandbox = token.externalPurchaseId?.hasPrefix("SANDBOX") == true
            return (token.bundleId, token.appAppleId, sandbox ? .sandbox : .production)
        }
        if let appData { return (appData.bundleId, appData.appAppleId, appData.environment) }
        return (nil, nil, nil)
    }
}

/// The signed app transaction (AppTransaction): proof the app itself was bought or downloaded.
public struct AppTransaction: Codable, Hashable, Sendable {
    package var receiptType: AppStoreEnvironment?
    package var appAppleId: Int64?
    package var bundleId: String?
    package var applicationVersion: String?
    package var versionExternalIdentifier: Int64?
    public var receiptCreationDate: AppStoreDate?
    package var originalPurchaseDate: AppStoreDate?
    package var originalApplicationVersion: String?
    package var deviceVerification: String?
    package var deviceVerificationNonce: String?
    package var preorderDate: AppStoreDate?
    package var appTransactionId: String?
    package var originalPlatform: String?

    package init() {}
}
