public import Foundation
public import OpenSSLCrypto

/// Proves a StoreKit 1 app receipt came from Apple, locally, before anything is asked of Apple:
/// its PKCS#7 signature covers the exact content, the signer chains through the intermediates the
/// container carries to a configured receipt root (never to a root the container carries), and the
/// signer is Apple's receipt-signing certificate. Certificates are checked at the receipt's
/// creation date, not now: receipt-signing leaves last two years, and a genuine receipt stays
/// genuine (as `signedDate` is used for StoreKit 2).
///
/// The creation date is read from the content before that content is authenticated; that is
/// safe because the signature then has to verify over those very bytes, date included. A receipt
/// without a creation date is checked at the current time.
public struct AppReceiptAuthenticator: Sendable {
    /// The extension Apple's receipt-signing leaves carry ("Mac App Store and iTunes Store Receipt Signing").
    package static let receiptSigningMarkerOID = "1.2.840.113635.100.6.11.1"

    public let trustRoots: [Certificate]
    /// The service's clock, for a receipt without a creation date.
    let now: @Sendable () -> Date

    public init(trustRoots: [Certificate], now: @escaping @Sendable () -> Date = { Date() }) {
        self.trustRoots = trustRoots
        self.now = now
    }

    /// The receipt read from the authenticated content. Throws `.receiptMalformed`,
    /// `.receiptSignatureInvalid`, `.chainNotTrusted` or `.missingAppleExtension`.
    public func authenticate(base64 text: String) throws(AppStoreVerificationError) -> AppReceipt {
        let (der, container) = try AppReceipt.container(base64: text)
        let claimed = try AppReceipt(payload: container.content)
        let verified: PKCS7SignatureVerifier.Verified
        do {
            verified = try PKCS7SignatureVerifier(trustRoots: trustRoots).verify(
                der: der, at: claimed.creationDate ?? now())
        } catch let error as CryptoError where error.code == .chainInvalid {
            throw AppStoreVerificationError(
                .chainNotTrusted,
                "receipt signer does not chain to a receipt root at the receipt's creation date: \(error.message)")
        } catch {
            throw AppStoreVerificationError(.receiptSignatureInvalid, "receipt signature does not verify: \(error)")
        }
        // The date the chain was checked at must be the one the signature covers.
        guard verified.content == container.content else {
            throw AppStoreVerificationError(
                .receiptSignatureInvalid, "the signed content is not the content that was read")
        }
        guard !verified.signers.isEmpty,
            verified.signers.allSatisfy({ $0.hasExtension(oid: Self.receiptSigningMarkerOID) })
        else {
            throw AppStoreVerificationError(
                .missingAppleExtension, "receipt signer is not Apple's receipt-signing certificate")
        }
        return try AppReceipt(payload: verified.content)
    }
}
