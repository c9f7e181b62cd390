import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

@testable import AppStore

private let sandbox = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox])

private func verifier(
    _ pki: AppleTestPKI, now: @escaping @Sendable () -> Date = { Date() }
) -> AppStoreSignedDataVerifier {
    AppStoreSignedDataVerifier(trustRoots: [pki.root], now: now)
}

func expectRejection(
    _ reason: AppStoreVerificationError.Reason, _ body: () throws -> Void,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    do {
        try body()
        Issue.record("accepted; expected \(reason)", sourceLocation: sourceLocation)
    } catch let error as AppStoreVerificationError {
        #expect(
            error.reason == reason, "rejected as \(error.reason) (\(error.message)); expected \(reason)",
            sourceLocation: sourceLocation)
    } catch {
        Issue.record("failed with \(error); expected \(reason)", sourceLocation: sourceLocation)
    }
}

@Suite struct AppleRoot {
    @Test func embeddedRootIsApplesG3() throws {
        let root = try AppleRootCertificates.appleRoot()
        #expect(
            Hex.encode(try root.sha256Fingerprint).uppercased()
                == "63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179")
        #expect(root.subject.contains("Apple Root CA - G3"))
    }

    @Test func environmentVariableReplacesTheRoot() throws {
        let pki = try AppleTestPKI()
        let directory = TestDatabase.temporaryDirectory("roots")
        let der = directory.appendingPathComponent("root.der"), pem = directory.appendingPathComponent("root.pem")
        try pki.root.derEncoded.write(to: der)
        try
            ("-----BEGIN CERTIFICATE-----\n" + pki.root.derEncoded.base64EncodedString(options: .lineLength64Characters)
            + "\n-----END CERTIFICATE-----\n").write(to: pem, atomically: true, encoding: .utf8)
        let roots = try AppleRootCertificates.configured(environment: [
            "RECEIPTGATE_APPLE_ROOT_CERTS": "\(der.path), \(pem.path)"
        ])
        #expect(roots == [pki.root, pki.root])
        #expect(try AppleRootCertificates.configured(environment: [:]) == [try AppleRootCertificates.appleRoot()])
        #expect(throws: CryptoError.self) {
            try AppleRootCertificates.configured(environment: ["RECEIPTGATE_APPLE_ROOT_CERTS": "/nonexistent"])
        }
    }
}

/// A StoreKit 2 transaction Apple really signed (sandbox, 2025-02-10), published in the spec of
/// a public Ruby App Store Server API client. Its leaf certificate expired on 2025-10-11, so it
/// verifies only because validity is checked at the payload's signedDate, as Apple's library does.
@Suite struct RealAppleSignedData {
    static func token() throws -> String {
        let url = try #require(
            Bundle.module.url(forResource: "Fixtures/real-sandbox-transaction", withExtension: "jws"))
        return try String(contentsOf: url, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func verifiesAgainstTheRealAppleRoot() throws {
        let verifier = AppStoreSignedDataVerifier(trustRoots: [try AppleRootCertificates.appleRoot()])
        let expectations = AppStoreExpectations(bundleIDs: ["com.goodheartapp"], environments: [.sandbox])
        let transaction = try verifier.verifyTransaction(try Self.token(), expecting: expectations)
        #expect(transaction.transactionId == "2000000847061981")
        #expect(transaction.productId == "gh_super_good_ticket_1")
        #expect(transaction.type == .consumable)
        #expect(transaction.environment == .sandbox)
        #expect(transaction.price == 230_000)
        #expect(transaction.currency == "JPY")
        #expect(transaction.signedDate?.milliseconds == 1_739_161_772_561)
    }

    @Test func realTokenIsStillCheckedAgainstTheCaller() throws {
        let verifier = AppStoreSignedDataVerifier(trustRoots: [try AppleRootCertificates.appleRoot()])
        let token = try Self.token()
        expectRejection(.bundleMismatch) {
            _ = try verifier.verifyTransaction(
                token, expecting: .init(bundleIDs: ["com.other"], environments: [.sandbox]))
        }
        expectRejection(.environmentMismatch) {
            _ = try verifier.verifyTransaction(
                token, expecting: .init(bundleIDs: ["com.goodheartapp"], environments: [.production]))
        }
        // Trusting only a root of our own, Apple's genuine token is refused.
        let ownRoot = try AppleTestPKI().root
        expectRejection(.chainNotTrusted) {
            _ = try AppStoreSignedDataVerifier(trustRoots: [ownRoot])
                .verifyTransaction(token, expecting: .init(bundleIDs: ["com.goodheartapp"], environments: [.sandbox]))
        }
    }
}

@Suite struct SignedDataRules {
    @Test func aGenuineTransactionVerifiesAndDecodes() throws {
        let pki = try AppleTestPKI()
        let token = try pki.sign(AppleTestPKI.transaction(["appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138"]))
        let transaction = try verifier(pki).verifyTransaction(token, expecting: sandbox)
        #expect(transaction.transactionId == "2000000111111111")
        #expect(transaction.inAppOwnershipType == .purchased)
        #expect(transaction.appAccountToken == "7e3fb20b-4cdb-47cc-936d-99d65f608138")
        #expect(transaction.price == 990)
    }

    @Test func tamperingIsRefused() throws {
        let pki = try AppleTestPKI()
        let token = try pki.sign(AppleTestPKI.transaction())
        let parts = token.split(separator: ".").map(String.init)
        let richer = Base64.urlEncode(
            try JSONSerialization.data(withJSONObject: AppleTestPKI.transaction(["quantity": 100])))
        expectRejection(.signatureInvalid) {
            _ = try verifier(pki).verifyTransaction("\(parts[0]).\(richer).\(parts[2])", expecting: sandbox)
        }
        var signature = try #require(Base64.urlDecode(parts[2]))
        signature[5] ^= 0x40
        expectRejection(.signatureInvalid) {
            _ = try verifier(pki).verifyTransaction(
                "\(parts[0]).\(parts[1]).\(Base64.urlEncode(signature))", expecting: sandbox)
        }
    }

    @Test func shapeAndAlgorithmRules() throws {
        let pki = try AppleTestPKI()
        let token = try pki.sign(AppleTestPKI.transaction())
        let parts = token.split(separator: ".").map(String.init)
        expectRejection(.malformed) {
            _ = try verifier(pki).verifyTransaction("\(parts[0]).\(parts[1])", expecting: sandbox)
        }
        expectRejection(.malformed) {
            _ = try verifier(pki).verifyTransaction("\(parts[0]).\(parts[1])!.\(parts[2])", expecting: sandbox)
        }
        expectRejection(.malformed) { _ = try verifier(pki).verifyTransaction("not a token", expecting: sandbox) }
        // A header outside the base64url alphabet is refused, also by a verifier that holds the genuine header in its cache.
        let warmed = verifier(pki)
        _ = try warmed.verifyTransaction(token, expecting: sandbox)
        for header in [
            "\(parts[0])!", "\(parts[0].dropLast())+", "=\(parts[0].dropFirst())", "\(parts[0].dropLast(4))====",
        ] {
            expectRejection(.malformed) {
                _ = try warmed.verifyTransaction("\(header).\(parts[1]).\(parts[2])", expecting: sandbox)
            }
        }
        for alg in ["none", "HS256", "RS256", "ES384"] {
            let signed = try pki.sign(AppleTestPKI.transaction(), alg: alg)
            expectRejection(.unsupportedAlgorithm) {
                _ = try verifier(pki).verifyTransaction(signed, expecting: sandbox)
            }
        }
        let chainOfTwo = try pki.sign(AppleTestPKI.transaction(), x5c: Array(pki.x5c.prefix(2)))
        expectRejection(.invalidChainLength) { _ = try verifier(pki).verifyTransaction(chainOfTwo, expecting: sandbox) }
        let chainOfFour = try pki.sign(AppleTestPKI.transaction(), x5c: pki.x5c + [pki.x5c[2]])
        expectRejection(.invalidChainLength) {
            _ = try verifier(pki).verifyTransaction(chainOfFour, expecting: sandbox)
        }
        let garbageLeaf = try pki.sign(AppleTestPKI.transaction(), x5c: ["AAAA", pki.x5c[1], pki.x5c[2]])
        expectRejection(.invalidCertificate) {
            _ = try verifier(pki).verifyTransaction(garbageLeaf, expecting: sandbox)
        }
    }

    @Test func onlyConfiguredRootsAreTrustedNeverTheThirdX5CEntry() throws {
        let genuine = try AppleTestPKI(), attacker = try AppleTestPKI()
        // The attacker's token carries the attacker's own root as the third entry.
        let selfRooted = try attacker.sign(AppleTestPKI.transaction())
        expectRejection(.chainNotTrusted) {
            _ = try verifier(genuine).verifyTransaction(selfRooted, expecting: sandbox)
        }
        // ... or the genuine root as the third entry, which changes nothing.
        let spoofed = try attacker.sign(
            AppleTestPKI.transaction(), x5c: [attacker.x5c[0], attacker.x5c[1], genuine.x5c[2]])
        expectRejection(.chainNotTrusted) { _ = try verifier(genuine).verifyTransaction(spoofed, expecting: sandbox) }
    }

    @Test func markerExtensionsAreRequired() throws {
        var noLeafMarker = AppleTestPKI.Options()
        noLeafMarker.leafMarker = false
        let withoutLeaf = try AppleTestPKI(noLeafMarker)
        let unmarkedLeaf = try withoutLeaf.sign(AppleTestPKI.transaction())
        expectRejection(.missingAppleExtension) {
            _ = try verifier(withoutLeaf).verifyTransaction(unmarkedLeaf, expecting: sandbox)
        }
        var noIntermediateMarker = AppleTestPKI.Options()
        noIntermediateMarker.intermediateMarker = false
        let withoutIntermediate = try AppleTestPKI(noIntermediateMarker)
        let unmarkedIntermediate = try withoutIntermediate.sign(AppleTestPKI.transaction())
        expectRejection(.missingAppleExtension) {
            _ = try verifier(withoutIntermediate).verifyTransaction(unmarkedIntermediate, expecting: sandbox)
        }
    }

    @Test func validityIsCheckedAtTheSigningDate() throws {
        var options = AppleTestPKI.Options()
        options.validFrom = Date(timeIntervalSince1970: 1_600_000_000)
        options.leafValidUntil = Date(timeIntervalSince1970: 1_700_000_000)
        let pki = try AppleTestPKI(options)
        let verifier = verifier(pki)
        // Signed while the leaf was valid: accepted today, long after the leaf expired.
        let inside = try pki.sign(AppleTestPKI.transaction(["signedDate": Int64(1_650_000_000_000)]))
        #expect(try verifier.verifyTransaction(inside, expecting: sandbox).transactionId != nil)
        // Signed after the leaf expired: refused, even though the pair is now in the cache.
        let after = try pki.sign(AppleTestPKI.transaction(["signedDate": Int64(1_700_000_100_000)]))
        expectRejection(.chainNotTrusted) { _ = try verifier.verifyTransaction(after, expecting: sandbox) }
        // No signedDate at all: checked now, when the leaf has expired.
        var undated = AppleTestPKI.transaction()
        undated["signedDate"] = nil
        let undatedToken = try pki.sign(undated)
        expectRejection(.chainNotTrusted) { _ = try verifier.verifyTransaction(undatedToken, expecting: sandbox) }
        // An app transaction uses receiptCreationDate.
        let app = try pki.sign([
            "receiptType": "Sandbox", "bundleId": "com.example.game", "appAppleId": 1,
            "receiptCreationDate": Int64(1_650_000_000_000), "appTransactionId": "704",
        ])
        #expect(try verifier.verifyAppTransaction(app, expecting: sandbox).appTransactionId == "704")
    }

    @Test func bundleAndEnvironmentAreTheCallersToChoose() throws {
        let pki = try AppleTestPKI()
        let token = try pki.sign(
            AppleTestPKI.transaction(["bundleId": "com.example.other", "environment": "Production"]))
        expectRejection(.bundleMismatch) { _ = try verifier(pki).verifyTransaction(token, expecting: sandbox) }
        expectRejection(.environmentMismatch) {
            _ = try verifier(pki).verifyTransaction(
                token, expecting: .init(bundleIDs: ["com.example.other"], environments: [.sandbox]))
        }
        let both = AppStoreExpectations(
            bundleIDs: ["com.example.game", "com.example.other"], environments: [.sandbox, .production])
        #expect(try verifier(pki).verifyTransaction(token, expecting: both).environment == .production)
    }

    @Test func unknownValuesAndFractionalDatesDecode() throws {
        let pki = try AppleTestPKI()
        let token = try pki.sign(
            AppleTestPKI.transaction([
                "type": "Brand New Kind", "purchaseDate": 1_700_000_000_123.75,
                "revocationReason": 7, "offerType": 9, "futureField": ["x": 1],
            ]))
        let transaction = try verifier(pki).verifyTransaction(token, expecting: sandbox)
        #expect(transaction.type?.rawValue == "Brand New Kind")
        #expect(transaction.purchaseDate?.milliseconds == 1_700_000_000_123)
        #expect(transaction.revocationReason?.rawValue == 7)
        #expect(transaction.offerType?.rawValue == 9)
    }

    /// ECDSA signatures are malleable: (r, n − s) verifies too. Both tokens are genuine and must
    /// name the same transaction, which is why the ledger keys on ids, never on token bytes.
    @Test func equivalentSignatureEncodingsNameTheSameTransaction() throws {
        let pki = try AppleTestPKI()
        let token = try pki.sign(AppleTestPKI.transaction())
        let parts = token.split(separator: ".").map(String.init)
        let signature = try #require(Base64.urlDecode(parts[2]))
        let twin =
            "\(parts[0]).\(parts[1]).\(Base64.urlEncode(signature.prefix(32) + P256Order.negate(Data(signature.suffix(32)))))"
        #expect(twin != token)
        let verifier = verifier(pki)
        #expect(
            try verifier.verifyTransaction(token, expecting: sandbox).transactionId
                == verifier.verifyTransaction(twin, expecting: sandbox).transactionId)
    }

    @Test func notificationsAndTheirNestedDataVerify() throws {
        let pki = try AppleTestPKI()
        let signedTransaction = try pki.sign(AppleTestPKI.transaction())
        let notification = try pki.sign([
            "notificationType": "REFUND", "notificationUUID": "002e14d5-51f5-4503-b5a8-c3a1af68eb20", "version": "2.0",
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
            "data": [
                "environment": "Sandbox", "bundleId": "com.example.game", "appAppleId": 41234,
                "signedTransactionInfo": signedTransaction,
            ] as [String: any Sendable],
        ])
        let verifier = verifier(pki)
        let decoded = try verifier.verifyNotification(notification, expecting: sandbox)
        #expect(decoded.notificationType == .refund)
        let nested = try verifier.verifyTransaction(
            try #require(decoded.data?.signedTransactionInfo), expecting: sandbox)
        #expect(nested.transactionId == "2000000111111111")
        expectRejection(.bundleMismatch) {
            _ = try verifier.verifyNotification(
                notification, expecting: .init(bundleIDs: ["x"], environments: [.sandbox]))
        }
    }

    @Test func theCacheIsBoundedAndKeyedByCertificates() throws {
        let cache = VerifiedChainCache(capacity: 2)
        let key = try AppleTestPKI().leafKey.publicKey
        let window = CertificateChainVerifier.ValidityWindow(
            notBefore: .distantPast, notAfter: .distantFuture, length: 3)
        for index in 0..<5 {
            cache.store(
                .init(chain: Data("chain\(index)".utf8), key: key, window: window), header: Data("header\(index)".utf8))
        }
        #expect(cache.count == 2)
        #expect(cache.lookup(header: Data("header4".utf8), at: Date()) != nil)
        #expect(cache.lookup(chain: Data("chain4".utf8), at: Date()) != nil)
        #expect(cache.lookup(chain: Data("chain0".utf8), at: Date()) == nil)
        #expect(cache.lookup(header: Data("header0".utf8), at: Date()) == nil)
        let narrow = CertificateChainVerifier.ValidityWindow(
            notBefore: Date(timeIntervalSince1970: 0), notAfter: Date(timeIntervalSince1970: 10), length: 3)
        cache.store(.init(chain: Data("dated".utf8), key: key, window: narrow), header: Data("dated-header".utf8))
        #expect(cache.lookup(header: Data("dated-header".utf8), at: Date(timeIntervalSince1970: 5)) != nil)
        #expect(
            cache.lookup(header: Data("dated-header".utf8), at: Date()) == nil,
            "a cached chain is only reused inside its validity window")
    }

    /// Apple's certificates are public: anyone can wrap them in headers with junk fields. Such a
    /// header enters the cache only if its token's signature verified, and the chain is cached once.
    @Test func junkHeaderFieldsCannotChurnTheCache() throws {
        let pki = try AppleTestPKI()
        let verifier = verifier(pki)
        let payload = try JSONSerialization.data(withJSONObject: AppleTestPKI.transaction(), options: [.sortedKeys])
        let genuine = try AppleTestPKI.sign(
            payloadBytes: payload, header: ["alg": "ES256", "x5c": pki.x5c, "junk": "a"], key: pki.leafKey)
        let forgedSignature = try pki.sign(AppleTestPKI.transaction(["transactionId": "1"])).split(separator: ".")[2]
        for index in 0..<20 {
            let header = try AppleTestPKI.sign(
                payloadBytes: payload, header: ["alg": "ES256", "x5c": pki.x5c, "junk": "\(index)"], key: pki.leafKey)
            let parts = header.split(separator: ".")
            expectRejection(.signatureInvalid) {
                _ = try verifier.verifyTransaction("\(parts[0]).\(parts[1]).\(forgedSignature)", expecting: sandbox)
            }
        }
        #expect(verifier.cache.count == 0)
        #expect(verifier.cache.headerCount == 0)
        _ = try verifier.verifyTransaction(genuine, expecting: sandbox)
        _ = try verifier.verifyTransaction(try pki.sign(AppleTestPKI.transaction()), expecting: sandbox)
        #expect(verifier.cache.count == 1, "one chain, whatever the headers around it")
        #expect(verifier.cache.headerCount == 2)
    }
}

/// n − s for the P-256 group order n (big-endian, 32 bytes): the other valid `s` of a signature.
enum P256Order {
    static let n: [UInt8] = Array(Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!)

    static func negate(_ s: Data) -> Data {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        let value = [UInt8](s)
        for index in stride(from: 31, through: 0, by: -1) {
            var difference = Int(n[index]) - Int(value[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return Data(result)
    }
}
