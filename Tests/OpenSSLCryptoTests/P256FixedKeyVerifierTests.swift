import COpenSSL
import Foundation
import TestSupport
import Testing

@testable import OpenSSLCrypto

/// The fixed-key P-256 verifier writes out the steps of ECDSA verification over OpenSSL's
/// arithmetic, so it is held to two references that owe nothing to it: NIST's CAVP vectors and
/// OpenSSL's own verifier (`EVP_PKEY_verify`), on the same inputs.
@Suite struct P256FixedKeyVerifierTests {
    /// P-256's group order n, big-endian.
    static let order = Hex.decode("ffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551")!

    static func fixedVerifier(_ key: PublicKey) throws -> P256FixedKeyVerifier {
        try #require(P256FixedKeyVerifier(key: key.key.pointer))
    }

    static func fixedVerdict(_ verifier: P256FixedKeyVerifier, message: Data, raw: Data) throws -> Bool {
        let digest = try SHA256.hash(message)
        return digest.withUnsafeBytes { digest in
            raw.withUnsafeBytes { raw in
                verifier.isValid(
                    digest: digest, r: UnsafeRawBufferPointer(rebasing: raw[0..<32]),
                    s: UnsafeRawBufferPointer(rebasing: raw[32..<64]))
            }
        }
    }

    /// OpenSSL's verdict: its verifier on the DER form of (r, s).
    static func opensslVerdict(_ key: PublicKey, message: Data, raw: Data) throws -> Bool {
        let der = try ECDSASignature.rawToDER(raw, coordinateSize: 32)
        return key.key.verifySHA256(signature: der, message: message)
    }

    static func padded(_ hex: String) throws -> Data {
        try #require(Hex.decode(String(repeating: "0", count: max(0, 64 - hex.count)) + hex))
    }

    @Test func nistSignatureVerificationVectors() async throws {
        try await offThePool {
            let text = try fixture("nist-cavp-sigver-p256-sha256.rsp")
            var fields: [String: String] = [:]
            var checked = 0, valid = 0
            // NIST's files end lines with CR LF.
            for line in text.components(separatedBy: .newlines) + [""] {
                if let equals = line.firstIndex(of: "="), !line.hasPrefix("#") {
                    fields[line[..<equals].trimmingCharacters(in: .whitespaces)] = line[line.index(after: equals)...]
                        .trimmingCharacters(in: .whitespaces)
                    continue
                }
                guard let message = fields["Msg"].flatMap(Hex.decode), let qx = fields["Qx"], let qy = fields["Qy"],
                    let r = fields["R"], let s = fields["S"], let result = fields["Result"]
                else { continue }
                fields = [:]
                let expected = result.hasPrefix("P")
                let raw = try Self.padded(r) + Self.padded(s)
                // A changed Q may be no point of the curve at all: then there is no key, and no signature is valid.
                guard let key = try? PublicKey(p256X: try Self.padded(qx), y: try Self.padded(qy)) else {
                    #expect(!expected, "vector \(checked): the key is refused but the signature is marked valid")
                    checked += 1
                    continue
                }
                #expect(
                    try Self.fixedVerdict(try Self.fixedVerifier(key), message: message, raw: raw) == expected,
                    "vector \(checked): \(result)")
                #expect(
                    try Self.opensslVerdict(key, message: message, raw: raw) == expected,
                    "vector \(checked) (OpenSSL): \(result)")
                // Either choice of `RECEIPTGATE_ES256_FIXED_KEY` gives NIST's verdict.
                #expect(
                    FixedKeyES256Verifier().isValid(signature: raw, for: message, key: key) == expected,
                    "vector \(checked) (switch on)")
                #expect(
                    OpenSSLES256Verifier().isValid(signature: raw, for: message, key: key) == expected,
                    "vector \(checked) (switch off)")
                checked += 1
                if expected { valid += 1 }
            }
            #expect(checked == 15 && valid == 3)
        }
    }

    @Test func agreesWithOpenSSLOnGenuineTamperedAndEdgeSignatures() async throws {
        try await offThePool {
            var generator = SeededRandom()
            var validSeen = 0, invalidSeen = 0
            for _ in 0..<3 {
                let privateKey = try PrivateKey.generateP256()
                let key = try privateKey.publicKey
                let verifier = try Self.fixedVerifier(key)
                let otherKey = try PrivateKey.generateP256()
                for round in 0..<200 {
                    let message = Data(
                        (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                            UInt8.random(in: 0...255, using: &generator)
                        })
                    var raw = try privateKey.signES256(message)
                    var signed = message
                    switch round % 8 {
                    case 0, 1: break  // genuine
                    case 2:
                        raw[Int.random(in: 0..<64, using: &generator)] ^=
                            1 << UInt8.random(in: 0...7, using: &generator)
                    case 3: signed.append(0)
                    case 4: raw = try otherKey.signES256(message)
                    case 5:  // s replaced by n - s: the same signature in its other form, valid for ECDSA
                        raw = raw.prefix(32) + Self.subtract(Self.order, raw.suffix(32))
                    case 6:  // r or s out of range: 0, n, n + 1, n - 1, all ones
                        let edges = [
                            Data(count: 32), Self.order, Self.add(Self.order, 1), Self.add(Self.order, -1),
                            Data(repeating: 0xff, count: 32),
                        ]
                        let edge = edges[Int.random(in: 0..<edges.count, using: &generator)]
                        raw = Bool.random(using: &generator) ? edge + raw.suffix(32) : raw.prefix(32) + edge
                    default: raw = Data((0..<64).map { _ in UInt8.random(in: 0...255, using: &generator) })
                    }
                    let expected = try Self.opensslVerdict(key, message: signed, raw: raw)
                    #expect(
                        try Self.fixedVerdict(verifier, message: signed, raw: raw) == expected,
                        "round \(round): \(Hex.encode(raw)) (\(generator.replay); keys are not seeded)")
                    if expected { validSeen += 1 } else { invalidSeen += 1 }
                }
            }
            // Genuine signatures and their n - s twins verify; everything else was refused by both.
            #expect(validSeen >= 3 * 75 && invalidSeen >= 3 * 100)
        }
    }

    /// Through the public API: a key in steady use gets its table, and its answers stay OpenSSL's.
    @Test func aKeyInSteadyUseVerifiesWithItsTable() async throws {
        let privateKey = try PrivateKey.generateP256()
        let key = try privateKey.publicKey
        let message = Data("steady".utf8)
        let raw = try privateKey.signES256(message)
        #expect(!key.key.hasFixedKeyTable)
        for _ in 0..<ECVerifyContexts.verificationsBeforeTable {
            #expect(key.isValidES256(signature: raw, for: message))
        }
        #expect(await eventually { key.key.hasFixedKeyTable })
        #expect(key.isValidES256(signature: raw, for: message))
        #expect(!key.isValidES256(signature: raw, for: Data("steadz".utf8)))
        var flipped = raw
        flipped[40] ^= 0x01
        #expect(!key.isValidES256(signature: flipped, for: message))
        #expect(!key.isValidES256(signature: raw.prefix(63), for: message))
        #expect(try key.isValidES256(signature: privateKey.signES256(Data()), for: Data()))
        // Many threads at once share the table (each verification takes its own scratch numbers).
        let wrong = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for index in 0..<200 {
                        let text = Data("concurrent \(index)".utf8)
                        let signature = try privateKey.signES256(text)
                        if !key.isValidES256(signature: signature, for: text) { wrong += 1 }
                        if key.isValidES256(signature: signature, for: text + [0]) { wrong += 1 }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(wrong == 0)
    }

    /// Big-endian 32-byte arithmetic for the edge values (wraps modulo 2^256).
    static func subtract(_ a: Data, _ b: Data) -> Data {
        var result = [UInt8](repeating: 0, count: 32), borrow = 0
        for index in (0..<32).reversed() {
            let difference = Int(a[a.startIndex + index]) - Int(b[b.startIndex + index]) - borrow
            result[index] = UInt8((difference + 256) % 256)
            borrow = difference < 0 ? 1 : 0
        }
        return Data(result)
    }

    static func add(_ a: Data, _ value: Int) -> Data {
        var one = Data(count: 32)
        one[31] = UInt8(abs(value))
        return value >= 0 ? subtract(a, subtract(Data(count: 32), one)) : subtract(a, one)
    }
}

/// The corners of the verification equation, built with OpenSSL's arithmetic for a key whose
/// private scalar the test knows: u1 = 0, R at infinity, and x(R) ≥ n (accepted as r = x − n).
/// The fixed-key verifier must answer each as OpenSSL's `EVP_PKEY_verify` does.
@Suite struct P256FixedKeyCornerCases {
    final class Arithmetic {
        let curve = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1)!
        let context = BN_CTX_new()!
        var order: OpaquePointer { EC_GROUP_get0_order(curve) }
        deinit { BN_CTX_free(context); EC_GROUP_free(curve) }

        func number(_ bytes: Data) -> OpaquePointer {
            bytes.withUnsafeBytes { BN_bin2bn($0.baseAddress, Int32(bytes.count), nil)! }
        }
        func random() -> OpaquePointer {
            let n = BN_new()!; repeat { BN_rand_range(n, order) } while BN_is_zero(n) == 1; return n
        }
        func bytes(_ n: OpaquePointer) -> Data {
            var out = [UInt8](repeating: 0, count: 32); BN_bn2binpad(n, &out, 32); return Data(out)
        }
        func mulMod(_ a: OpaquePointer, _ b: OpaquePointer) -> OpaquePointer {
            let r = BN_new()!; BN_mod_mul(r, a, b, order, context); return r
        }
        func inverse(_ a: OpaquePointer) -> OpaquePointer {
            let r = BN_new()!; BN_mod_inverse(r, a, order, context); return r
        }
        func negate(_ a: OpaquePointer) -> OpaquePointer {
            let r = BN_new()!; BN_mod_sub(r, order, a, order, context); return r
        }
        /// g·G + q·Q (either may be nil).
        func point(g: OpaquePointer?, q: OpaquePointer? = nil, Q: OpaquePointer? = nil) -> OpaquePointer {
            let p = EC_POINT_new(curve)!; EC_POINT_mul(curve, p, g, Q, q, context); return p
        }
        func publicKey(_ point: OpaquePointer) throws -> PublicKey {
            let x = BN_new()!, y = BN_new()!
            defer { BN_free(x); BN_free(y) }
            EC_POINT_get_affine_coordinates(curve, point, x, y, context)
            return try PublicKey(p256X: bytes(x), y: bytes(y))
        }
        func x(_ point: OpaquePointer) -> OpaquePointer {
            let x = BN_new()!; EC_POINT_get_affine_coordinates(curve, point, x, nil, context); return x
        }
    }

    /// OpenSSL's verdict on a chosen digest (no hashing), as the production verifier asks it.
    static func openssl(_ key: PublicKey, digest: Data, raw: Data) throws -> Bool {
        let der = try ECDSASignature.rawToDER(raw, coordinateSize: 32)
        let context = try #require(EVP_PKEY_CTX_new_from_pkey(nil, key.key.pointer, nil))
        defer { EVP_PKEY_CTX_free(context); ERR_clear_error() }
        #expect(EVP_PKEY_verify_init(context) == 1)
        return der.withUnsafeBytes { sig in
            digest.withUnsafeBytes { tbs in
                EVP_PKEY_verify(
                    context, sig.baseAddress!.assumingMemoryBound(to: UInt8.self), sig.count,
                    tbs.baseAddress!.assumingMemoryBound(to: UInt8.self), tbs.count) == 1
            }
        }
    }

    static func fixed(_ key: PublicKey, digest: Data, raw: Data) throws -> Bool {
        let verifier = try #require(P256FixedKeyVerifier(key: key.key.pointer))
        return digest.withUnsafeBytes { digest in
            raw.withUnsafeBytes { raw in
                verifier.isValid(
                    digest: digest, r: UnsafeRawBufferPointer(rebasing: raw[0..<32]),
                    s: UnsafeRawBufferPointer(rebasing: raw[32..<64]))
            }
        }
    }

    static func expectAgreement(_ key: PublicKey, digest: Data, raw: Data, valid: Bool, _ name: String) throws {
        #expect(try openssl(key, digest: digest, raw: raw) == valid, "OpenSSL, \(name)")
        #expect(try fixed(key, digest: digest, raw: raw) == valid, "fixed-key, \(name)")
    }

    @Test func digestsThatVanishModuloN() throws {
        let math = Arithmetic()
        let d = math.random(), key = try math.publicKey(math.point(g: d))
        // e = 0 and e = n: u1 = 0, so R = u2·Q alone. s = k⁻¹(e + r·d) = k⁻¹·r·d.
        for digest in [Data(count: 32), math.bytes(math.order)] {
            let k = math.random()
            let r = math.number(math.bytes(math.x(math.point(g: k))))
            BN_nnmod(r, r, math.order, math.context)
            let s = math.mulMod(math.inverse(k), math.mulMod(r, d))
            try Self.expectAgreement(key, digest: digest, raw: math.bytes(r) + math.bytes(s), valid: true, "u1 = 0")
        }
    }

    @Test func aSumAtInfinityIsRefused() throws {
        let math = Arithmetic()
        let d = math.random(), key = try math.publicKey(math.point(g: d))
        // e = −r·d makes u1·G + u2·Q = s⁻¹(e + r·d)·G the point at infinity, for any s.
        for _ in 0..<5 {
            let r = math.random(), s = math.random()
            let e = math.negate(math.mulMod(r, d))
            try Self.expectAgreement(
                key, digest: math.bytes(e), raw: math.bytes(r) + math.bytes(s), valid: false, "R at infinity")
        }
    }

    @Test func anXBeyondTheOrderCountsModuloN() throws {
        let math = Arithmetic()
        // A point R whose x lies in [n, p): the first such x on the curve.
        let x = BN_dup(math.order)!, R = EC_POINT_new(math.curve)!
        while EC_POINT_set_compressed_coordinates(math.curve, R, x, 0, math.context) != 1 {
            ERR_clear_error()
            BN_add_word(x, 1)
        }
        let r = BN_new()!
        BN_sub(r, x, math.order)
        // Q = r⁻¹(s·R − e·G) makes (r, s) a valid signature of e: R = s⁻¹(e·G + r·Q).
        let s = math.random(), e = math.random()
        let sR = EC_POINT_new(math.curve)!
        EC_POINT_mul(math.curve, sR, nil, R, s, math.context)
        let minusEG = math.point(g: math.negate(e))
        EC_POINT_add(math.curve, sR, sR, minusEG, math.context)
        let Q = EC_POINT_new(math.curve)!
        EC_POINT_mul(math.curve, Q, nil, sR, math.inverse(r), math.context)
        let key = try math.publicKey(Q)
        try Self.expectAgreement(
            key, digest: math.bytes(e), raw: math.bytes(r) + math.bytes(s), valid: true, "r = x(R) − n")
        try Self.expectAgreement(
            key, digest: math.bytes(e), raw: math.bytes(x) + math.bytes(s), valid: false, "r = x(R) ≥ n")
    }
}
