import COpenSSL
import CShims
import Foundation

/// ECDSA P-256 verification for one public key that verifies many signatures (Apple's leaf key
/// signs every StoreKit 2 transaction of a period), with OpenSSL's fixed-base tables for both
/// points of the verification equation.
///
/// OpenSSL verifies `u1·G + u2·Q` with a built-in table for the generator G but computes the `Q`
/// half afresh every time: about two thirds of a verification. It can build the same kind of
/// table for any generator (`EC_GROUP_precompute_mult`), so this keeps a copy of the P-256 group
/// whose generator is Q, tabulated once (about 27 ms and 150 KB), and then a verification is two
/// table-driven multiplications, one addition and one inversion, all OpenSSL's arithmetic. Only
/// the steps of the equation are written here, as SEC 1 v2 §4.1.4 states them, in two equivalent
/// forms that spare OpenSSL's slowest calls (s⁻¹ by Fermat, x(R) compared in Jacobian
/// coordinates); the tests hold them to OpenSSL's own verifier and NIST's CAVP vectors.
final class P256FixedKeyVerifier: @unchecked Sendable {
    /// P-256 as OpenSSL ships it (G's table built in).
    private let curve: OpaquePointer
    /// P-256 with the key as its generator, tabulated. Read-only after `init`.
    private let keyCurve: OpaquePointer
    /// The group order n and the field prime p (owned by `curve`).
    private let order: OpaquePointer
    private let field: OpaquePointer
    /// n − 2 and n's Montgomery context: s⁻¹ = s^(n−2) mod n, as n is prime. OpenSSL's
    /// exponentiation takes about 13 µs here against 16 µs for its general `BN_mod_inverse`.
    private let orderMinusTwo: OpaquePointer
    private let orderMontgomery: OpaquePointer
    private let idle = IdleList<Scratch>(limit: ECVerifyContexts.maxIdle) { $0.free() }

    /// nil if `publicPoint` (SEC 1 encoding, compressed or not) is no point of P-256 other than
    /// infinity, or OpenSSL cannot build the table.
    init?(publicPoint: [UInt8]) {
        guard let curve = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1) else { return nil }
        guard let keyCurve = Self.curve(generator: publicPoint, on: curve) else {
            EC_GROUP_free(curve)
            _ = drainOpenSSLErrors()
            return nil
        }
        guard let order = EC_GROUP_get0_order(curve), let field = EC_GROUP_get0_field(curve),
            let (orderMinusTwo, orderMontgomery) = Self.fermatExponent(order)
        else {
            EC_GROUP_free(keyCurve)
            EC_GROUP_free(curve)
            _ = drainOpenSSLErrors()
            return nil
        }
        self.curve = curve
        self.keyCurve = keyCurve
        self.order = order
        self.field = field
        self.orderMinusTwo = orderMinusTwo
        self.orderMontgomery = orderMontgomery
    }

    /// For tests: the verifier of an EVP_PKEY's point.
    convenience init?(key: OpaquePointer) {
        guard let point = Self.publicPoint(of: key) else { return nil }
        self.init(publicPoint: point)
    }

    deinit {
        idle.discardAll()  // their points before the groups
        BN_MONT_CTX_free(orderMontgomery)
        BN_free(orderMinusTwo)
        EC_GROUP_free(keyCurve)
        EC_GROUP_free(curve)
    }

    /// n − 2 and a Montgomery context for n.
    private static func fermatExponent(_ order: OpaquePointer) -> (OpaquePointer, OpaquePointer)? {
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        guard let exponent = BN_dup(order) else { return nil }
        guard BN_sub_word(exponent, 2) == 1, let montgomery = BN_MONT_CTX_new() else {
            BN_free(exponent)
            return nil
        }
        guard BN_MONT_CTX_set(montgomery, order, context) == 1 else {
            BN_MONT_CTX_free(montgomery)
            BN_free(exponent)
            return nil
        }
        return (exponent, montgomery)
    }

    /// The public point of an EC key as OpenSSL encodes it (65 bytes uncompressed, 33 compressed).
    static func publicPoint(of key: OpaquePointer) -> [UInt8]? {
        var encoded = [UInt8](repeating: 0, count: 65)
        var length = 0
        guard EVP_PKEY_get_octet_string_param(key, "pub", &encoded, encoded.count, &length) == 1,
            length == 65 || length == 33
        else {
            _ = drainOpenSSLErrors()
            return nil
        }
        return Array(encoded.prefix(length))
    }

    /// A copy of P-256 whose generator is `point`, with its table built.
    private static func curve(generator encoded: [UInt8], on curve: OpaquePointer) -> OpaquePointer? {
        guard let context = BN_CTX_new() else { return nil }
        defer { BN_CTX_free(context) }
        guard let point = EC_POINT_new(curve) else { return nil }
        defer { EC_POINT_free(point) }
        // oct2point refuses a point off the curve; the point at infinity cannot generate anything.
        guard EC_POINT_oct2point(curve, point, encoded, encoded.count, context) == 1,
            EC_POINT_is_at_infinity(curve, point) == 0,
            let copy = EC_GROUP_dup(curve)
        else { return nil }
        // OpenSSL uses a table only for the generator it was built from (it compares them on
        // every multiplication), so a table can never serve another point.
        guard EC_GROUP_set_generator(copy, point, EC_GROUP_get0_order(curve), EC_GROUP_get0_cofactor(curve)) == 1,
            rg_ec_group_precompute_generator(copy, context) == 1
        else {
            EC_GROUP_free(copy)
            return nil
        }
        return copy
    }

    /// Whether (r, s), each 32 big-endian bytes, is a valid signature of `digest` (32 bytes of SHA-256).
    func isValid(
        digest: UnsafeRawBufferPointer, r rBytes: UnsafeRawBufferPointer, s sBytes: UnsafeRawBufferPointer
    ) -> Bool {
        guard digest.count == 32, rBytes.count == 32, sBytes.count == 32, let scratch = take() else { return false }
        defer { giveBack(scratch) }
        let valid = verify(digest: digest, r: rBytes, s: sBytes, with: scratch)
        if !valid { _ = drainOpenSSLErrors() }
        return valid
    }

    private func verify(
        digest: UnsafeRawBufferPointer, r rBytes: UnsafeRawBufferPointer, s sBytes: UnsafeRawBufferPointer,
        with scratch: Scratch
    ) -> Bool {
        let (r, s, e, w, u1, u2) = (scratch.r, scratch.s, scratch.e, scratch.w, scratch.u1, scratch.u2)
        let context = scratch.context
        guard BN_bin2bn(rBytes.baseAddress, 32, r) != nil, BN_bin2bn(sBytes.baseAddress, 32, s) != nil,
            BN_bin2bn(digest.baseAddress, 32, e) != nil
        else { return false }
        // 1. r and s in [1, n-1].
        guard BN_is_zero(r) == 0, BN_is_zero(s) == 0, BN_ucmp(r, order) < 0, BN_ucmp(s, order) < 0 else { return false }
        // 2-3. e is the digest itself (SHA-256 is as long as n); w = s⁻¹ = s^(n−2) mod n.
        guard BN_mod_exp_mont(w, s, orderMinusTwo, order, context, orderMontgomery) == 1 else { return false }
        // 4. u1 = e·w mod n, u2 = r·w mod n.
        guard BN_mod_mul(u1, e, w, order, context) == 1, BN_mod_mul(u2, r, w, order, context) == 1 else { return false }
        // 5. R = u1·G + u2·Q, each from its table; the point at infinity fails.
        guard EC_POINT_mul(curve, scratch.uG, u1, nil, nil, context) == 1,
            EC_POINT_mul(keyCurve, scratch.uQ, u2, nil, nil, context) == 1,
            EC_POINT_add(curve, scratch.sum, scratch.uG, scratch.uQ, context) == 1,
            EC_POINT_is_at_infinity(curve, scratch.sum) == 0
        else { return false }
        // 6. Valid when x(R) mod n == r.
        return xCoordinate(of: scratch.sum, modOrderEquals: r, with: scratch)
    }

    /// Whether x(R) mod n == r, without the field inversion (5 µs) that R's affine x costs.
    /// OpenSSL holds R in Jacobian coordinates (X, Y, Z) with x(R) = X/Z² mod p, so x(R) == c
    /// exactly when X == c·Z² mod p (Z ≠ 0: R is not at infinity). As x(R) < p and n < p,
    /// x(R) mod n == r means x(R) == r, or x(R) == r + n where r + n < p.
    private func xCoordinate(of point: OpaquePointer, modOrderEquals r: OpaquePointer, with scratch: Scratch) -> Bool {
        let context = scratch.context
        guard rg_ec_point_jacobian_coordinates(curve, point, scratch.x, scratch.y, scratch.z, context) == 1,
            BN_mod_sqr(scratch.zSquared, scratch.z, field, context) == 1,
            BN_is_zero(scratch.zSquared) == 0
        else { return false }  // Z ≡ 0 is infinity, never an x
        func isX(_ candidate: OpaquePointer) -> Bool {
            let difference = scratch.difference
            return BN_mod_mul(difference, candidate, scratch.zSquared, field, context) == 1
                && BN_mod_sub(difference, difference, scratch.x, field, context) == 1
                && BN_is_zero(difference) == 1
        }
        if isX(r) { return true }
        guard BN_add(scratch.rPlusN, r, order) == 1, BN_ucmp(scratch.rPlusN, field) < 0 else { return false }
        return isX(scratch.rPlusN)
    }

    /// Numbers and points for one verification, reused (allocating them costs more than the
    /// arithmetic they hold). Used by one thread at a time.
    private final class Scratch {
        let context: OpaquePointer
        let r: OpaquePointer, s: OpaquePointer, e: OpaquePointer, w: OpaquePointer, u1: OpaquePointer, u2: OpaquePointer
        /// R's Jacobian coordinates and the x comparison's working numbers.
        let x: OpaquePointer, y: OpaquePointer, z: OpaquePointer, zSquared: OpaquePointer
        let difference: OpaquePointer, rPlusN: OpaquePointer
        let uG: OpaquePointer, uQ: OpaquePointer, sum: OpaquePointer
        private let numbers: [OpaquePointer]

        init?(curve: OpaquePointer, keyCurve: OpaquePointer) {
            guard let context = BN_CTX_new() else { return nil }
            let numbers = (0..<12).compactMap { _ in BN_new() }
            let points = [EC_POINT_new(curve), EC_POINT_new(keyCurve), EC_POINT_new(curve)].compactMap { $0 }
            guard numbers.count == 12, points.count == 3 else {
                numbers.forEach { BN_free($0) }
                points.forEach { EC_POINT_free($0) }
                BN_CTX_free(context)
                return nil
            }
            self.context = context
            self.numbers = numbers
            (r, s, e, w, u1, u2) = (numbers[0], numbers[1], numbers[2], numbers[3], numbers[4], numbers[5])
            (x, y, z, zSquared, difference, rPlusN) = (
                numbers[6], numbers[7], numbers[8], numbers[9], numbers[10], numbers[11]
            )
            (uG, uQ, sum) = (points[0], points[1], points[2])
        }

        func free() {
            numbers.forEach { BN_free($0) }
            [uG, uQ, sum].forEach { EC_POINT_free($0) }
            BN_CTX_free(context)
        }
    }

    private func take() -> Scratch? {
        idle.take { [curve, keyCurve] in Scratch(curve: curve, keyCurve: keyCurve) }
    }

    private func giveBack(_ scratch: Scratch) { idle.giveBack(scratch) }
}
