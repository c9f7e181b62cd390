public import Crypto
public import Foundation
import Synchronization

/// What the caller accepts: its registered bundle ids, its environments and, when known, the
/// app's Apple id (checked for production notifications and app transactions, as Apple does).
public struct AppStoreExpectations: Sendable {
    public var bundleIDs: Set<String>
    public var environments: Set<AppStoreEnvironment>
    public var appAppleID: Int64?

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
    static let leafMarkerOID = "1.2.840.113635.100.6.11.1"
    static let intermediateMarkerOID = "1.2.840.113635.100.6.2.1"

    private let chainVerifier: CertificateChainVerifier
    private let cache: VerifiedChainCache
    private let now: @Sendable () -> Date

    public init(trustRoots: [Certificate], cacheCapacity: Int = 64, now: @escaping @Sendable () -> Date = { Date() }) {
        chainVerifier = CertificateChainVerifier(trustRoots: trustRoots, strict: true)
        cache = VerifiedChainCache(capacity: cacheCapacity)
        self.now = now
    }

    // MARK: - Typed entry points

    public func verifyTransaction(_ jws: String, expecting expectations: AppStoreExpectations) throws(AppStoreVerificationError) -> JWSTransactionDecodedPayload {
        let transaction = try decode(JWSTransactionDecodedPayload.self, from: try verifiedPayload(jws))
        try check(bundleID: transaction.bundleId, environment: transaction.environment, against: expectations)
        return transaction
    }

    /// Renewal info carries no bundle id; only its environment is checked (as Apple does).
    public func verifyRenewalInfo(_ jws: String, expecting expectations: AppStoreExpectations) throws(AppStoreVerificationError) -> JWSRenewalInfoDecodedPayload {
        let renewal = try decode(JWSRenewalInfoDecodedPayload.self, from: try verifiedPayload(jws))
        guard let environment = renewal.environment, expectations.environments.contains(environment) else {
            throw AppStoreVerificationError(.environmentMismatch, "renewal info is for \(renewal.environment?.rawValue ?? "no environment")")
        }
        return renewal
    }

    public func verifyNotification(_ signedPayload: String, expecting expectations: AppStoreExpectations) throws(AppStoreVerificationError) -> ResponseBodyV2DecodedPayload {
        let notification = try decode(ResponseBodyV2DecodedPayload.self, from: try verifiedPayload(signedPayload))
        let identity = notification.identity
        try checkAppAppleID(identity.appAppleId, environment: identity.environment, against: expectations)
        try check(bundleID: identity.bundleId, environment: identity.environment, against: expectations)
        return notification
    }

    public func verifyAppTransaction(_ jws: String, expecting expectations: AppStoreExpectations) throws(AppStoreVerificationError) -> AppTransaction {
        let transaction = try decode(AppTransaction.self, from: try verifiedPayload(jws))
        try checkAppAppleID(transaction.appAppleId, environment: transaction.receiptType, against: expectations)
        try check(bundleID: transaction.bundleId, environment: transaction.receiptType, against: expectations)
        return transaction
    }

    // MARK: - The shared rules

    /// Checks everything but the payload's meaning and returns the payload's bytes.
    public func verifiedPayload(_ token: String) throws(AppStoreVerificationError) -> Data {
        let jws: CompactJWS
        do {
            jws = try CompactJWS(parsing: token)
        } catch {
            throw AppStoreVerificationError(.malformed, "\(error)")
        }
        guard let dates = try? JSONDecoder().decode(SigningDates.self, from: jws.payload) else {
            throw AppStoreVerificationError(.malformed, "payload is not a JSON object")
        }
        guard jws.header.alg == "ES256" else {
            throw AppStoreVerificationError(.unsupportedAlgorithm, "alg must be ES256, got \(jws.header.alg ?? "none")")
        }
        guard let x5c = jws.header.x5c, x5c.count == 3 else {
            throw AppStoreVerificationError(.invalidChainLength, "x5c must hold exactly 3 certificates, got \(jws.header.x5c?.count ?? 0)")
        }
        let signingDate = (dates.signedDate ?? dates.receiptCreationDate)?.date ?? now()
        let leafKey = try verifiedLeafKey(leaf: x5c[0], intermediate: x5c[1], at: signingDate)
        guard jws.isValidSignature(using: leafKey, allowedAlgorithms: ["ES256"]) else {
            throw AppStoreVerificationError(.signatureInvalid, "the signature does not verify with the leaf certificate's key")
        }
        return jws.payload
    }

    /// The leaf's public key once the chain is proven, from the cache when this exact pair was
    /// already proven for a window containing `date`.
    private func verifiedLeafKey(leaf: String, intermediate: String, at date: Date) throws(AppStoreVerificationError) -> PublicKey {
        let cacheKey = VerifiedChainCache.Key(leaf: leaf, intermediate: intermediate)
        if let cached = cache.lookup(cacheKey, at: date) { return cached }

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
            throw AppStoreVerificationError(.chainNotTrusted, "the leaf must chain through the x5c intermediate to a root")
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
        cache.store(cacheKey, key: key, window: window)
        return key
    }

    private func decode<T: Decodable>(_ type: T.Type, from payload: Data) throws(AppStoreVerificationError) -> T {
        do {
            return try JSONDecoder().decode(type, from: payload)
        } catch {
            throw AppStoreVerificationError(.payloadInvalid, "payload is not a \(type): \(error)")
        }
    }

    private func check(bundleID: String?, environment: AppStoreEnvironment?, against expectations: AppStoreExpectations) throws(AppStoreVerificationError) {
        guard let bundleID, expectations.bundleIDs.contains(bundleID) else {
            throw AppStoreVerificationError(.bundleMismatch, "bundle id \(bundleID ?? "(none)") is not registered for this client")
        }
        guard let environment, expectations.environments.contains(environment) else {
            throw AppStoreVerificationError(.environmentMismatch, "environment \(environment?.rawValue ?? "(none)") is not accepted for this client")
        }
    }

    private func checkAppAppleID(_ appAppleID: Int64?, environment: AppStoreEnvironment?, against expectations: AppStoreExpectations) throws(AppStoreVerificationError) {
        guard environment == .production, let expected = expectations.appAppleID else { return }
        guard appAppleID == expected else {
            throw AppStoreVerificationError(.bundleMismatch, "appAppleId \(appAppleID.map(String.init) ?? "(none)") is not this app's")
        }
    }

    private struct SigningDates: Decodable {
        var signedDate: AppStoreDate?
        var receiptCreationDate: AppStoreDate?
    }
}

/// Proven (leaf, intermediate) pairs, keyed by the exact certificate text, each with the window
/// in which its chain is valid. Bounded: the oldest entry leaves first.
final class VerifiedChainCache: Sendable {
    struct Key: Hashable, Sendable {
        let leaf: String
        let intermediate: String
    }

    private struct Entry {
        let key: PublicKey
        let window: CertificateChainVerifier.ValidityWindow
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var order: [Key] = []
    }

    private let capacity: Int
    private let state = Mutex(State())

    init(capacity: Int) { self.capacity = max(1, capacity) }

    func lookup(_ key: Key, at date: Date) -> PublicKey? {
        state.withLock { state in
            guard let entry = state.entries[key], entry.window.contains(date) else { return nil }
            return entry.key
        }
    }

    func store(_ key: Key, key publicKey: PublicKey, window: CertificateChainVerifier.ValidityWindow) {
        state.withLock { state in
            if state.entries[key] == nil {
                state.order.append(key)
                if state.order.count > capacity { state.entries[state.order.removeFirst()] = nil }
            }
            state.entries[key] = Entry(key: publicKey, window: window)
        }
    }

    var count: Int { state.withLock { $0.entries.count } }
}
