public import Foundation
import JSON
public import OpenSSLCrypto
import Synchronization

/// What the caller accepts: its registered bundle ids, its environments and, when known, the
/// app's Apple id (checked for production notifications and app transactions, as Apple does).
public struct AppStoreExpectations: Sendable {
    public var bundleIDs: Set<String>
    public var environments: Set<AppStoreEnvironment>
    package var appAppleID: Int64?

    public init(bundleIDs: Set<String>, environments: Set<AppStoreEnvironment>, appAppleID: Int64? = nil) {
        self.bundleIDs = bundleIDs
        self.environments = environments
        self.appAppleID = appAppleID
    }
}

/// Verifies StoreKit 2 signed data locally, by the rules of Apple's app-store-server-library:
/// compact JWS with strict base64url, `alg` ES256, exactly three `x5c` certificates of which the
/// leaf and intermediate are used and the third never trusted, a chain to a configured root valid
/// at the payload's `signedDate` (or `receiptCreationDate`, else now) under strict X.509 checks,
/// Apple's marker extensions on intermediate and leaf, the signature by the leaf's key, then the
/// payload's bundle id and environment against the caller's expectations.
public final class AppStoreSignedDataVerifier: Sendable {
    package static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    package static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"

    private let chainVerifier: CertificateChainVerifier
    let cache: VerifiedChainCache
    /// The service's clock (`PluginEnvironment.now`); the provider reads the same one.
    package let now: @Sendable () -> Date
    /// How the leaf's signature is checked (the deployment's `RECEIPTGATE_ES256_FIXED_KEY`).
    package let es256: any ES256Verifier

    /// With online checks on, certificates must be valid now, as Apple's library judges them
    /// then: a revocation answer is about the certificate today, so its validity is too. Off, at
    /// the payload's `signedDate` (now when it has none), so a token signed in time still verifies.
    package let onlineChecks: Bool

    public init(
        trustRoots: [Certificate], cacheCapacity: Int = 64, es256: any ES256Verifier = FixedKeyES256Verifier(),
        onlineChecks: Bool = false, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.onlineChecks = onlineChecks
        chainVerifier = CertificateChainVerifier(trustRoots: trustRoots, strict: true)
        cache = VerifiedChainCache(capacity: cacheCapacity)
        self.es256 = es256
        self.now = now
    }

    // MARK: - Typed entry points

    public func verifyTransaction(
        _ jws: String, expecting expectations: AppStoreExpectations
    ) throws(AppStoreVerificationError) -> JWSTransactionDecodedPayload {
        let transaction = try verified(
            jws, as: JWSTransactionDecodedPayload.self, reading: JWSTransactionDecodedPayload.init(jsonPayload:))
        try check(bundleID: transaction.bundleId, environment: transaction.environment, against: expectations)
        return transaction
    }

    /// Renewal info carries no bundle id; only its environment is checked (as Apple does).
    public func verifyRenewalInfo(
        _ jws: String, expecting expectations: AppStoreExpectations
    ) throws(AppStoreVerificationError) -> JWSRenewalInfoDecodedPayload {
        let renewal = try verified(jws, as: JWSRenewalInfoDecodedPayload.self)
        guard let environment = renewal.environment, expectations.environments.contains(environment) else {
            throw AppStoreVerificationError(
                .environmentMismatch, "renewal info is for \(renewal.environment?.rawValue ?? "no environment")")
        }
        return renewal
    }

    public func verifyNotification(
        _ signedPayload: String, expecting expectations: AppStoreExpectations
    ) throws(AppStoreVerificationError) -> ResponseBodyV2DecodedPayload {
        let notification = try verified(signedPayload, as: ResponseBodyV2DecodedPayload.self)
        let identity = notification.identity
        try checkAppAppleID(identity.appAppleId, environment: identity.environment, against: expectations)
        try check(bundleID: identity.bundleId, environment: identity.environment, against: expectations)
        return notification
    }

    public func verifyAppTransaction(
        _ jws: String, expecting expectations: AppStoreExpectations
    ) throws(AppStoreVerificationError) -> AppTransaction {
        let transaction = try verified(jws, as: AppTransaction.self)
        try checkAppAppleID(transaction.appAppleId, environment: transaction.receiptType, against: expectations)
        try check(bundleID: transaction.bundleId, environment: transaction.receiptType, against: expectations)
        return transaction
    }

    // MARK: - The shared rules

    /// The header bytes and the leaf and intermediate certificates of a token (for online
    /// revocation checks after local verification).
    public func chainCertificates(
        of token: String
    ) throws(AppStoreVerificationError) -> (header: Data, leaf: Certificate, intermediate: Certificate) {
        do {
            let parts = try CompactJWS.Parts(splitting: token)
            let header = try CompactJWS(parts: parts).header
            guard let x5c = header.x5c, x5c.count == 3, let leaf = Base64.decode(x5c[0]),
                let intermediate = Base64.decode(x5c[1])
            else {
                throw CryptoError(.invalidCertificate, "no x5c chain")
            }
            return (parts.headerSegment, try Certificate(derEncoded: leaf), try Certificate(derEncoded: intermediate))
        } catch {
            throw AppStoreVerificationError(.invalidCertificate, "\(error)")
        }
    }

    /// Checks everything but the payload's meaning and returns the payload's bytes.
    public func verifiedPayload(_ token: String) throws(AppStoreVerificationError) -> Data {
        try verifiedWithBytes(token) { payload throws(AppStoreVerificationError) in
            try Self.decode(SigningDates.self, from: payload, reading: SigningDates.init(jsonPayload:))
        }.payload
    }

    /// Parses, decodes the payload once (it names the signing date the chain is checked at),
    /// then proves chain and signature before anything decoded is returned.
    private func verified<T: AppStoreSignedPayload & Decodable>(
        _ token: String, as type: T.Type
    ) throws(AppStoreVerificationError) -> T {
        try verifiedWithBytes(token) { payload throws(AppStoreVerificationError) in try Self.decode(type, from: payload)
        }.value
    }

    /// The same for a payload read by hand (JSONReader), which has no other decoder.
    private func verified<T: AppStoreSignedPayload>(
        _ token: String, as type: T.Type,
        reading read: PayloadReader<T>
    ) throws(AppStoreVerificationError) -> T {
        try verifiedWithBytes(token) { payload throws(AppStoreVerificationError) in
            try Self.decode(type, from: payload, reading: read)
        }.value
    }

    private func verifiedWithBytes<T: AppStoreSignedPayload>(
        _ token: String, decode: (Data) throws(AppStoreVerificationError) -> T
    )
        throws(AppStoreVerificationError) -> (value: T, payload: Data)
    {
        let parts: CompactJWS.Parts
        do {
            parts = try CompactJWS.Parts(splitting: token)
        } catch {
            throw AppStoreVerificationError(.malformed, "\(error)")
        }
        guard (parts.payload.first { $0 != 0x20 && $0 != 0x0a && $0 != 0x0d && $0 != 0x09 }) == UInt8(ascii: "{") else {
            throw AppStoreVerificationError(.malformed, "payload is not a JSON object")
        }
        let value = try decode(parts.payload)
        let validityDate = onlineChecks ? now() : value.signingDate?.date ?? now()
        let leaf = try verifiedLeafKey(for: parts, at: validityDate)
        guard es256.isValid(signature: parts.signature, for: parts.signingInput, key: leaf.key) else {
            throw AppStoreVerificationError(
                .signatureInvalid, "the signature does not verify with the leaf certificate's key")
        }
        // Only a chain whose leaf has just signed something goes into the cache: a header nobody
        // could sign (junk fields around Apple's public certificates) never takes a place in it.
        if let proven = leaf.toCache { cache.store(proven, header: parts.headerSegment) }
        return (value, parts.payload)
    }

    /// The leaf key for this header: from the cache when the same chain was proven for a window
    /// containing `date`, else proven now (and returned with what to cache once the signature holds).
    private func verifiedLeafKey(
        for parts: CompactJWS.Parts, at date: Date
    ) throws(AppStoreVerificationError)
        -> (key: PublicKey, toCache: VerifiedChainCache.Proven?)
    {
        if let cached = cache.lookup(header: parts.headerSegment, at: date) { return (cached, nil) }
        let header: JWSHeader
        do {
            header = try CompactJWS(parts: parts).header
        } catch {
            throw AppStoreVerificationError(.malformed, "\(error)")
        }
        guard header.alg == "ES256" else {
            throw AppStoreVerificationError(.unsupportedAlgorithm, "alg must be ES256, got \(header.alg ?? "none")")
        }
        guard let x5c = header.x5c, x5c.count == 3 else {
            throw AppStoreVerificationError(
                .invalidChainLength, "x5c must hold exactly 3 certificates, got \(header.x5c?.count ?? 0)")
        }
        // The chain's identity is its certificates, not the header's other bytes.
        guard let chainDigest = try? SHA256.hash(Data(x5c.joined(separator: ",").utf8)) else {
            // No digest to key the cache by (OpenSSL failing): proven as if never seen, and not cached.
            return (try verifiedChain(leaf: x5c[0], intermediate: x5c[1], at: date).0, nil)
        }
        if let cached = cache.lookup(chain: chainDigest, at: date) {
            return (cached, VerifiedChainCache.Proven(chain: chainDigest, key: cached, window: nil))
        }
        let (key, window) = try verifiedChain(leaf: x5c[0], intermediate: x5c[1], at: date)
        return (key, VerifiedChainCache.Proven(chain: chainDigest, key: key, window: window))
    }

    /// Proves leaf → intermediate → a configured root at `date`, with Apple's marker extensions.
    private func verifiedChain(
        leaf: String, intermediate: String, at date: Date
    ) throws(AppStoreVerificationError)
        -> (PublicKey, CertificateChainVerifier.ValidityWindow)
    {
        let leafCertificate: Certificate, intermediateCertificate: Certificate
        do {
            guard let leafDER = Base64.decode(leaf), let intermediateDER = Base64.decode(intermediate) else {
                throw CryptoError(.invalidEncoding, "not base64")
            }
            leafCertificate = try Certificate(derEncoded: leafDER)
            intermediateCertificate = try Certificate(derEncoded: intermediateDER)
        } catch {
            throw AppStoreVerificationError(.invalidCertificate, "an x5c entry is not a base64 DER certificate")
        }
        let window: CertificateChainVerifier.ValidityWindow
        do {
            window = try chainVerifier.verify(leaf: leafCertificate, intermediates: [intermediateCertificate], at: date)
        } catch {
            throw AppStoreVerificationError(.chainNotTrusted, "\(error)")
        }
        guard window.length == 3 else {
            throw AppStoreVerificationError(
                .chainNotTrusted, "the leaf must chain through the x5c intermediate to a root")
        }
        guard intermediateCertificate.hasExtension(oid: Self.intermediateMarkerOID) else {
            throw AppStoreVerificationError(.missingAppleExtension, "intermediate lacks \(Self.intermediateMarkerOID)")
        }
        guard leafCertificate.hasExtension(oid: Self.leafMarkerOID) else {
            throw AppStoreVerificationError(.missingAppleExtension, "leaf lacks \(Self.leafMarkerOID)")
        }
        let key: PublicKey
        do {
            key = try leafCertificate.publicKey
        } catch {
            throw AppStoreVerificationError(.invalidCertificate, "leaf public key unreadable")
        }
        guard key.isP256 else { throw AppStoreVerificationError(.invalidCertificate, "leaf key is not P-256") }
        return (key, window)
    }

    /// A payload type's hand-written decoding (JSONReader), which gives what JSONDecoder would.
    private typealias PayloadReader<T> = (Data) throws(JSONReaderError) -> T

    /// A UTF-16 or UTF-32 payload is transcoded first, as JSONDecoder transcodes one.
    private static func decode<T>(
        _ type: T.Type, from payload: Data, reading read: PayloadReader<T>
    ) throws(AppStoreVerificationError) -> T {
        do throws(JSONReaderError) {
            do {
                return try read(payload)
            } catch  where error.code == .unsupportedEncoding {
                guard let utf8 = JSONReader.transcodedToUTF8(payload) else { throw error }
                return try read(utf8)
            }
        } catch {
            throw AppStoreVerificationError(.payloadInvalid, "payload is not a \(type): \(error)")
        }
    }

    private static func decode<T: Decodable>(_ type: T.Type, from payload: Data) throws(AppStoreVerificationError) -> T
    {
        do {
            return try JSONDecoder().decode(type, from: payload)
        } catch {
            throw AppStoreVerificationError(.payloadInvalid, "payload is not a \(type): \(error)")
        }
    }

    private func check(
        bundleID: String?, environment: AppStoreEnvironment?, against expectations: AppStoreExpectations
    ) throws(AppStoreVerificationError) {
        guard let bundleID, expectations.bundleIDs.contains(bundleID) else {
            throw AppStoreVerificationError(
                .bundleMismatch, "bundle id \(bundleID ?? "(none)") is not registered for this client")
        }
        guard let environment, expectations.environments.contains(environment) else {
            throw AppStoreVerificationError(
                .environmentMismatch, "environment \(environment?.rawValue ?? "(none)") is not accepted for this client"
            )
        }
    }

    private func checkAppAppleID(
        _ appAppleID: Int64?, environment: AppStoreEnvironment?, against expectations: AppStoreExpectations
    ) throws(AppStoreVerificationError) {
        guard environment == .production, let expected = expectations.appAppleID else { return }
        guard appAppleID == expected else {
            throw AppStoreVerificationError(
                .bundleMismatch, "appAppleId \(appAppleID.map(String.init) ?? "(none)") is not this app's")
        }
    }

    struct SigningDates: AppStoreSignedPayload {
        var signedDate: AppStoreDate?
        var receiptCreationDate: AppStoreDate?
        var signingDate: AppStoreDate? { signedDate ?? receiptCreationDate }

        init() {}

        /// For `verifiedPayload`: the two dates as JSONDecoder would decode them (DifferentialPayloadTests).
        init(jsonPayload payload: Data) throws(JSONReaderError) {
            var dates = SigningDates()
            try JSONReader.withDocument(payload, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
                var seenSigned = false, seenCreation = false
                let top = try reader.readDocument { member throws(JSONReaderError) in
                    switch try Self.fieldNames.index(of: member.key, in: reader) {
                    case 0 where !seenSigned:
                        seenSigned = true
                        dates.signedDate = try AppStoreDate(json: member.value, in: reader)
                    case 1 where !seenCreation:
                        seenCreation = true
                        dates.receiptCreationDate = try AppStoreDate(json: member.value, in: reader)
                    default:
                        break
                    }
                }
                guard case .object = top else { throw .typeMismatch(expected: "object", found: top) }
            }
            self = dates
        }

        private static let fieldNames = JSONFieldNames(["signedDate", "receiptCreationDate"])
    }
}
