public import Foundation
public import HTTPClient
public import OpenSSLCrypto
public import ReceiptCore

/// The App Store as a store provider.
public struct AppStoreProvider: NotificationReceiving {
    public let store = StoreID.appStore
    public let notificationPath = notificationRoute
    /// Where the App Store posts its notifications.
    static let notificationRoute = "/v1/notifications/app-store"
    public let verifier: AppStoreSignedDataVerifier
    public let configuration: AppStoreConfiguration?
    /// Set when online (OCSP) checks are on.
    public let revocation: AppleRevocationChecker?
    let http: HTTPClient
    /// The service's clock, the one its verifier checks certificates against.
    var now: @Sendable () -> Date { verifier.now }

    package init(
        verifier: AppStoreSignedDataVerifier, configuration: AppStoreConfiguration? = nil,
        http: HTTPClient = HTTPClient(),
        revocation: AppleRevocationChecker? = nil
    ) {
        self.verifier = verifier
        self.configuration = configuration
        self.http = http
        self.revocation =
            revocation
            ?? (configuration?.onlineChecks == true
                ? AppleRevocationChecker(http: http, trustRoots: configuration?.trustRoots ?? []) : nil)
    }

    /// A signed app transaction, proven as a signed transaction is: locally, then (if on) online.
    public func verifyAppTransaction(
        _ token: String, expecting expectations: AppStoreExpectations
    ) async throws(AppStoreVerificationError) -> AppTransaction {
        let appTransaction = try verifier.verifyAppTransaction(token, expecting: expectations)
        try await checkRevocation(token)
        return appTransaction
    }

    /// Local verification, then (if on) the online revocation check of the token's chain.
    public func verifyTransaction(
        _ token: String, expecting expectations: AppStoreExpectations
    ) async throws(AppStoreVerificationError) -> JWSTransactionDecodedPayload {
        let transaction = try verifier.verifyTransaction(token, expecting: expectations)
        try await checkRevocation(token)
        return transaction
    }

    func checkRevocation(_ token: String) async throws(AppStoreVerificationError) {
        guard let revocation else { return }
        let chain = try verifier.chainCertificates(of: token)
        try await revocation.check(chainKey: chain.header, leaf: chain.leaf, intermediate: chain.intermediate)
    }

    /// What the App Store can do for the service: verify, receive notifications, look up orders,
    /// and, with a Server API key, read back the notification history pushes may have missed and
    /// the subscriptions that went quiet, answer consumption requests and set the app account
    /// token of a purchase linked to an account after the sale; and prove who owns the app.
    public var registration: StoreRegistration {
        let hasKey = configuration?.serverAPIKey != nil
        let reconciler = configuration.flatMap { configuration in
            hasKey
                ? configuration.reconcileInterval.map { NotificationHistoryPoller(provider: self, interval: $0) } : nil
        }
        return StoreRegistration(
            Self.declaration, verifier: self, notifications: self, orderLookup: self,
            acknowledgement: hasKey ? self : nil, poller: reconciler,
            subscriptionReader: hasKey ? self : nil, refundAnswering: hasKey ? self : nil,
            accountTokenSetting: hasKey ? self : nil, externalPurchaseReporting: hasKey ? self : nil,
            appOwnership: self)
    }

    /// From the environment (docs/configuration.md, App Store); throws `AppStoreConfiguration.Invalid`.
    /// `es256` is the service's choice of ES256 verifier (`RECEIPTGATE_ES256_FIXED_KEY`).
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        http: HTTPClient = HTTPClient(), es256: any ES256Verifier = FixedKeyES256Verifier(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> AppStoreProvider {
        let configuration = try AppStoreConfiguration.fromEnvironment(environment)
        return AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(
                trustRoots: configuration.trustRoots, es256: es256,
                onlineChecks: configuration.onlineChecks, now: now),
            configuration: configuration, http: http)
    }

    /// How StoreKit 1 receipt signatures are authenticated: to the configured receipt roots, or
    /// Apple Root CA without a configuration.
    package var receiptAuthenticator: AppReceiptAuthenticator {
        AppReceiptAuthenticator(
            trustRoots: configuration?.receiptTrustRoots ?? AppleRootCertificates.defaultReceiptRoots, now: now)
    }

    /// How StoreKit 1 receipts of this app are confirmed, or nil if ReceiptGate has neither an
    /// App Store Server API key nor a shared secret.
    package func receiptValidator(bundleID: String) -> AppReceiptValidator? {
        guard let configuration else { return nil }
        let roots = configuration.receiptTrustRoots
        switch configuration.receiptMode {
        case .serverAPI?:
            return configuration.serverAPIClient(bundleID: bundleID, http: http, now: now).map {
                AppReceiptValidator(mode: .serverAPI($0), verifier: verifier, receiptTrustRoots: roots, now: now)
            }
        case .verifyReceipt?:
            return configuration.sharedSecret.map {
                AppReceiptValidator(
                    mode: .verifyReceipt(
                        sharedSecret: $0, productionURL: configuration.verifyReceiptProductionURL,
                        sandboxURL: configuration.verifyReceiptSandboxURL, http: http),
                    verifier: verifier, receiptTrustRoots: roots, now: now)
            }
        case nil:
            return nil
        }
    }

    /// App Store Server Notifications V2: `{"signedPayload": "<JWS>"}`.
    public func receiveNotification(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification {
        struct Envelope: Decodable { let signedPayload: String }
        guard let envelope = try? JSONDecoder().decode(Envelope.self, from: request.body) else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD", message: "body must be a JSON object with a signedPayload string")
        }
        let expectations = AppStoreExpectations(
            bundleIDs: registered.appIdentifiers,
            environments: Set(registered.environments.map(Self.appStoreEnvironment)))
        do {
            return try await notification(signedPayload: envelope.signedPayload, expecting: expectations)
        } catch let error as AppStoreVerificationError {
            throw NotificationRejection(
                error.isRetryable ? .retryable : .forged, reason: error.reason.rawValue, message: error.message)
        }
    }

    /// A notification's `signedPayload`, proven and decoded: the one path for a pushed notification
    /// and one read back from Apple's notification history.
    func notification(
        signedPayload: String, expecting expectations: AppStoreExpectations
    ) async throws -> StoreNotification {
        let notification = try verifier.verifyNotification(signedPayload, expecting: expectations)
        try await checkRevocation(signedPayload)
        guard let id = notification.notificationUUID, let type = notification.notificationType else {
            throw AppStoreVerificationError(.payloadInvalid, "notification has no notificationUUID or notificationType")
        }
        // Nested signed data is verified with the same rules before anything is read from it.
        var transaction: JWSTransactionDecodedPayload?
        if let signed = notification.data?.signedTransactionInfo {
            transaction = try await verifyTransaction(signed, expecting: expectations)
        }
        let renewal = try notification.data?.signedRenewalInfo.map {
            try verifier.verifyRenewalInfo($0, expecting: expectations)
        }
        var appTransaction: AppTransaction?
        if let signed = notification.appData?.signedAppTransactionInfo {
            appTransaction = try await verifyAppTransaction(signed, expecting: expectations)
        }
        let identity = notification.identity
        let decoded = DecodedNotification(
            notification: notification, transaction: transaction, renewalInfo: renewal, appTransaction: appTransaction)
        var stored = StoreNotification(
            store: store, notificationID: id, type: type.rawValue, subtype: notification.subtype?.rawValue,
            environment: identity.environment.flatMap(Self.storeEnvironment), appIdentifier: identity.bundleId,
            transactionID: transaction?.transactionId,
            originalTransactionID: transaction?.originalTransactionId ?? renewal?.originalTransactionId,
            productID: transaction?.productId ?? renewal?.productId, signedAt: notification.signedDate?.date,
            decodedJSON: try JSONEncoder.sortedForStorage.encode(decoded))
        let purchase = try transaction.map { try Self.purchase(from: $0) }
        let kind = Self.eventKind(type, subtype: notification.subtype, purchase: purchase)
        stored.event = StoreEvent(
            kind: kind, purchase: purchase,
            autoRenew: renewal?.autoRenewStatus.map { $0 == .on },
            gracePeriodExpires: renewal?.gracePeriodExpiresDate?.date,
            refundRequest: kind == .consumptionRequest
                ? Self.refundRequest(
                    id: id, signedAt: notification.signedDate?.date,
                    reason: notification.data?.consumptionRequestReason,
                    now: now())
                : nil)
        stored.event.unreportedExternalPurchase = Self.unreported(notification)
        stored.event.consentRevocation = Self.consentRevocation(type, appTransaction: appTransaction)
        return stored
    }

    /// The token an `EXTERNAL_PURCHASE_TOKEN` / `UNREPORTED` notification says is still unreported.
    static func unreported(_ notification: ResponseBodyV2DecodedPayload) -> ExternalPurchaseToken? {
        guard notification.notificationType == .externalPurchaseToken, notification.subtype == .unreported,
            let token = notification.externalPurchaseToken, let id = token.externalPurchaseId, !id.isEmpty,
            let bundleID = token.bundleId, let created = token.tokenCreationDate
        else { return nil }
        return self.token(
            externalPurchaseID: id, bundleID: bundleID, createdMs: created.milliseconds, expiresMs: nil)
    }

    /// Apple's notification types, as ledger events: a refund of an Advanced Commerce transaction
    /// that is not itself revoked refunds only the items that carry refunds or a revocation date.
    static func eventKind(
        _ type: NotificationType, subtype: NotificationSubtype?, purchase: VerifiedPurchase?
    ) -> StoreEvent.Kind {
        let kind = eventKind(type, subtype: subtype)
        guard kind == .refunded || kind == .revoked, let purchase, purchase.revocationDate == nil,
            purchase.items.contains(where: \.isRefunded)
        else { return kind }
        return .itemsRefunded
    }

    /// `RESCIND_CONSENT`: the consent of the account the app transaction names is withdrawn.
    /// Without an app transaction id nobody can be named; the revocation is still listed.
    static func consentRevocation(
        _ type: NotificationType, appTransaction: AppTransaction?
    ) -> ConsentRevocationNews? {
        guard type == .rescindConsent else { return nil }
        return ConsentRevocationNews(
            appTransactionID: appTransaction?.appTransactionId.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// Apple's notification types, as ledger events.
    static func eventKind(_ type: NotificationType, subtype: NotificationSubtype?) -> StoreEvent.Kind {
        switch type {
        case .refund: .refunded
        case .refundReversed: .refundReversed
        case .refundDeclined: .refundDeclined
        case .revoke: .revoked
        case .didRenew: .renewed
        case .subscribed: .subscribed
        case .expired: .expired
        case .didFailToRenew: .billingIssue
        case .gracePeriodExpired: .gracePeriodExpired
        case .didChangeRenewalStatus: .renewalStatusChanged
        case .consumptionRequest: .consumptionRequest
        // A one-time purchase (a consumable, a non-consumable, a non-renewing subscription;
        // Notifications 2.18), an offer code's redemption among them: recorded before its claim.
        case .oneTimeCharge: .purchased
        case .test: .test
        default: .other
        }
    }

    static func appStoreEnvironment(_ environment: StoreEnvironment) -> AppStoreEnvironment {
        environment == .production ? .production : .sandbox
    }

    static func storeEnvironment(_ environment: AppStoreEnvironment) -> StoreEnvironment? {
        switch environment {
        case .production: .production
        case .sandbox: .sandbox
        default: nil
        }
    }

    struct DecodedNotification: Encodable {
        let notification: ResponseBodyV2DecodedPayload
        let transaction: JWSTransactionDecodedPayload?
        let renewalInfo: JWSRenewalInfoDecodedPayload?
        /// From `appData` (a notification about the buyer's account rather than a purchase).
        let appTransaction: AppTransaction?
    }
}

extension JSONEncoder {
    static var sortedForStorage: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
