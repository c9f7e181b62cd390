import Foundation
public import ReceiptCore

extension AppStoreProvider: StoreProvider {
    /// A StoreKit 2 signed transaction (JWS) is verified locally; anything else is taken as a
    /// StoreKit 1 receipt: its signature is verified locally first, then its bundle id and
    /// environment checked, and only then is Apple asked to confirm it.
    ///
    /// Whether the client accepts the purchase's environment is the core's rule, applied to the
    /// purchase proven: Apple's signed data is expected from any environment the core knows. A
    /// receipt that names its environment is held to that rule before Apple is asked.
    public func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
        let expectations = AppStoreExpectations(
            bundleIDs: context.appIdentifiers,
            environments: Set(StoreEnvironment.allCases.map(Self.appStoreEnvironment)))
        do {
            if context.evidenceKind == .transactionID {
                return try await verifyTransactionID(evidence, context: context, expecting: expectations)
            }
            if Self.dotCount(evidence) == 2 {
                return [try Self.purchase(from: try await verifyTransaction(evidence, expecting: expectations))]
            }
            let receipt = try receiptAuthenticator.authenticate(base64: evidence)
            try AppReceiptValidator.checkIdentity(of: receipt, expecting: expectations)
            if let named = receipt.environment.flatMap(Self.storeEnvironment) {
                try VerificationChecks.accepts(named, accepted: context.environments)
            }
            guard let validator = receiptValidator(bundleID: receipt.bundleID ?? "") else {
                throw AppStoreVerificationError(
                    .misconfigured, "StoreKit 1 receipts need an App Store Server API key or a shared secret")
            }
            return try await validator.confirm(
                receipt, base64Receipt: evidence, expecting: expectations, productID: context.productID,
                transactionID: context.transactionID,
                deadline: context.deadline
            ).map(Self.purchase(from:))
        } catch let error as AppStoreVerificationError
            where error.reason.rawValue == Self.transactionLookupNotConfigured
        {
            throw StoreVerificationError(code: .invalidField, reason: error.reason.rawValue, message: error.message)
        } catch let error as AppStoreVerificationError {
            throw StoreVerificationError(
                code: error.errorCode, reason: error.reason.rawValue, message: error.message,
                isRetryable: error.isRetryable)
        }
    }

    static func purchase(
        from transaction: JWSTransactionDecodedPayload
    ) throws(AppStoreVerificationError) -> VerifiedPurchase {
        guard let id = transaction.transactionId, let environment = transaction.environment.flatMap(storeEnvironment)
        else {
            throw AppStoreVerificationError(
                .payloadInvalid, "transaction has no id or no production/sandbox environment")
        }
        var purchase = VerifiedPurchase(store: .appStore, environment: environment, transactionID: id)
        purchase.appIdentifier = transaction.bundleId
        purchase.originalTransactionID = transaction.originalTransactionId
        purchase.productID = transaction.productId
        purchase.kind = transaction.type.flatMap(kind)
        purchase.quantity = transaction.quantity
        purchase.priceMilliunits = transaction.price
        purchase.currency = transaction.currency
        purchase.storefront = transaction.storefront
        purchase.purchaseDate = transaction.purchaseDate?.date
        purchase.expiresDate = transaction.expiresDate?.date
        purchase.revocationDate = transaction.revocationDate?.date
        purchase.revocationReason = transaction.revocationReason.map(revocationReason)
        purchase.revocationReasonCode = transaction.revocationReason?.rawValue
        if transaction.revocationDate != nil {
            purchase.refund = RefundDetail(
                storeType: transaction.revocationType?.rawValue,
                storeSaysPartial: transaction.revocationType.map { $0 == .refundProrated },
                percentageMilliunits: transaction.revocationPercentage)
        }
        purchase.ownership =
            transaction.inAppOwnershipType == .familyShared
            ? .familyShared
            : transaction.inAppOwnershipType == .purchased ? .purchased : nil
        purchase.accountToken = transaction.appAccountToken?.lowercased()
        purchase.appTransactionID = transaction.appTransactionId
        purchase.offer = offer(of: transaction)
        purchase.items = items(of: transaction)
        purchase.commitment = commitment(of: transaction)
        return purchase
    }

    static func purchase(
        from confirmed: ConfirmedReceiptTransaction
    ) throws(AppStoreVerificationError) -> VerifiedPurchase {
        if let signed = confirmed.signedTransaction { return try purchase(from: signed) }
        guard let environment = storeEnvironment(confirmed.environment) else {
            throw AppStoreVerificationError(.payloadInvalid, "receipt environment is neither production nor sandbox")
        }
        var purchase = VerifiedPurchase(
            store: .appStore, environment: environment, transactionID: confirmed.transactionID)
        purchase.originalTransactionID = confirmed.originalTransactionID
        purchase.productID = confirmed.productID
        purchase.quantity = confirmed.quantity.map(Int.init)
        purchase.purchaseDate = confirmed.purchaseDate
        purchase.expiresDate = confirmed.expiresDate
        purchase.revocationDate = confirmed.cancellationDate
        return purchase
    }

    static func kind(_ type: TransactionType) -> ProductKind? {
        switch type {
        case .consumable: .consumable
        case .nonConsumable: .nonConsumable
        case .autoRenewableSubscription: .autoRenewableSubscription
        case .nonRenewingSubscription: .nonRenewingSubscription
        default: nil
        }
    }

    static func revocationReason(_ reason: RevocationReason) -> String {
        switch reason {
        case .refundedDueToIssue: "refunded_due_to_issue"
        case .refundedForOtherReason: "refunded_other_reason"
        default: "apple_reason_\(reason.rawValue)"
        }
    }

    /// A compact JWS has two dots, a base64 receipt none. Found with `memchr` over the contiguous
    /// bytes: a byte-by-byte walk costs microseconds on a 4 KB token, on every request.
    static func dotCount(_ evidence: String) -> Int {
        var evidence = evidence
        return evidence.withUTF8 { bytes in
            guard var cursor = bytes.baseAddress else { return 0 }
            let end = cursor + bytes.count
            var count = 0
            while cursor < end, let dot = memchr(cursor, Int32(UInt8(ascii: ".")), end - cursor) {
                count += 1
                cursor = UnsafePointer(dot.assumingMemoryBound(to: UInt8.self)) + 1
            }
            return count
        }
    }
}
