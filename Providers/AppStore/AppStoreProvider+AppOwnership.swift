import Foundation
import OpenSSLCrypto
public import ReceiptCore

/// A buyer's ownership of the app: a device's signed AppTransaction sent as verify evidence, or
/// Get App Transaction Info asked with any of the buyer's transaction ids (App Store Server API
/// 1.17). Either way the app transaction is a JWS proven exactly like a signed transaction before
/// anything in it is read (the fields as Apple's `AppTransaction` reference and the library's
/// `AppTransaction.py` name them).
extension AppStoreProvider: AppOwnershipProving {
    /// A JWS whose payload names the app transaction's `receiptType` and no `transactionId`: the
    /// form StoreKit's `AppTransaction.shared` hands the app. Every signed transaction verified
    /// passes here first, so the payload's bytes are searched, not parsed; a wrong guess is only
    /// refused by the proof that follows, never accepted.
    public func isAppOwnershipEvidence(_ evidence: String) -> Bool {
        // Every signed transaction passes here on its way to the verify path: the look is at bytes
        // (the header alone, with its certificate chain, is kilobytes), and only the payload is decoded.
        guard evidence.utf8.count <= Self.maxEvidenceBytes,
            let payload = evidence.utf8.withContiguousStorageIfAvailable(Self.payloadSegment) ?? nil,
            let decoded = Base64.urlDecode(payload)
        else { return false }
        return decoded.range(of: Self.receiptTypeKey) != nil && decoded.range(of: Self.transactionIDKey) == nil
    }

    /// The middle of a compact JWS (`header.payload.signature`): nil unless there are exactly two dots.
    static func payloadSegment(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let dot = UInt8(ascii: ".")
        guard let first = bytes.firstIndex(of: dot),
            let second = bytes[(first + 1)...].firstIndex(of: dot),
            !bytes[(second + 1)...].contains(dot)
        else { return nil }
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second]), as: UTF8.self)
    }

    private static let receiptTypeKey = Data(#""receiptType""#.utf8)
    private static let transactionIDKey = Data(#""transactionId""#.utf8)

    /// Larger than any token Apple signs; the quick look reads no more.
    static let maxEvidenceBytes = 64 * 1024

    public func proveAppOwnership(evidence: String, context: VerificationContext) async throws -> AppOwnership {
        do {
            return try Self.ownership(
                try await verifyAppTransaction(evidence, expecting: anyEnvironment(of: context)))
        } catch {
            throw Self.refusal(error)
        }
    }

    public func lookUpAppOwnership(transactionID: String, context: VerificationContext) async throws -> AppOwnership {
        guard Self.isTransactionID(transactionID) else {
            throw StoreVerificationError(
                code: .invalidField, reason: "INVALID_TRANSACTION_ID",
                message: "an App Store transaction id is up to 20 decimal digits")
        }
        guard let configuration, configuration.serverAPIKey != nil else {
            throw StoreVerificationError(
                code: .invalidField, reason: Self.transactionLookupNotConfigured,
                message: "a lookup needs the App Store Server API (RECEIPTGATE_APPSTORE_API_*), which is not configured"
            )
        }
        do {
            for bundle in context.appIdentifiers.sorted() {
                guard let client = configuration.serverAPIClient(bundleID: bundle, http: http, now: now) else {
                    continue
                }
                try AppReceiptValidator.checkTimeLeft(
                    before: "asking Apple about the app transaction of \(transactionID)", deadline: context.deadline)
                let signed: String
                do {
                    signed = try await client.appTransactionInfoInAnyEnvironment(transactionID)
                } catch  where error.kind == .notFound {
                    continue  // not this bundle's buyer
                } catch {
                    throw AppReceiptValidator.classify(error, transactionID: transactionID)
                }
                return try Self.ownership(
                    try await verifyAppTransaction(signed, expecting: anyEnvironment(of: context)))
            }
        } catch {
            throw Self.refusal(error)
        }
        throw StoreVerificationError(
            code: .notFound, reason: "APP_TRANSACTION_NOT_FOUND",
            message: "Apple knows no buyer of this app with transaction \(transactionID) in either environment")
    }

    /// The client's apps, in every environment the service knows: whether the client accepts the
    /// one proven is the core's rule.
    private func anyEnvironment(of context: VerificationContext) -> AppStoreExpectations {
        AppStoreExpectations(
            bundleIDs: context.appIdentifiers,
            environments: Set(StoreEnvironment.allCases.map(Self.appStoreEnvironment)))
    }

    static func ownership(_ transaction: AppTransaction) throws(AppStoreVerificationError) -> AppOwnership {
        guard let id = transaction.appTransactionId, !id.isEmpty,
            let environment = transaction.receiptType.flatMap(storeEnvironment)
        else {
            throw AppStoreVerificationError(
                .payloadInvalid, "the app transaction has no appTransactionId or no production/sandbox receiptType")
        }
        var ownership = AppOwnership(appTransactionID: id, environment: environment)
        ownership.appIdentifier = transaction.bundleId
        ownership.appVersion = transaction.applicationVersion
        ownership.originalAppVersion = transaction.originalApplicationVersion
        ownership.originalPurchaseDate = transaction.originalPurchaseDate?.date
        ownership.originalPlatform = transaction.originalPlatform
        ownership.preorderDate = transaction.preorderDate?.date
        return ownership
    }

    private static func refusal(_ error: any Error) -> any Error {
        guard let error = error as? AppStoreVerificationError else { return error }
        return StoreVerificationError(
            code: error.errorCode, reason: error.reason.rawValue, message: error.message,
            isRetryable: error.isRetryable)
    }
}
