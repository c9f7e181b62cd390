public import Foundation

/// How ES256 signatures (JOSE raw r ‖ s over SHA-256) are checked, chosen once per deployment
/// (`RECEIPTGATE_ES256_FIXED_KEY`). Both give the same verdict on every input; they differ in
/// speed and in how much of the arithmetic is OpenSSL's verifier rather than ours.
public protocol ES256Verifier: Sendable {
    /// False for a wrong or malformed signature, and for a key that is not P-256.
    func isValid(signature raw: Data, for message: some ContiguousBytes, key: PublicKey) -> Bool
}

/// The default: a key in steady use (Apple's leaf) gets a fixed-base table after 1,000 genuine
/// signatures, and is verified with it from then on, at about twice OpenSSL's rate
/// (`P256FixedKeyVerifier`, held to NIST's vectors and to OpenSSL's verdicts by OpenSSLCryptoTests).
public struct FixedKeyES256Verifier: ES256Verifier {
    public init() {}

    public func isValid(signature raw: Data, for message: some ContiguousBytes, key: PublicKey) -> Bool {
        key.isValidES256(signature: raw, for: message)
    }
}

/// OpenSSL's verifier (`EVP_PKEY_verify`) for every signature; no key ever gets a table. The
/// fallback an operator can switch to without a rebuild should the fixed-key path be in doubt.
package struct OpenSSLES256Verifier: ES256Verifier {
    package init() {}

    package func isValid(signature raw: Data, for message: some ContiguousBytes, key: PublicKey) -> Bool {
        guard key.isP256 else { return false }
        return key.key.verifyES256WithOpenSSL(raw: raw, message: message)
    }
}

extension ES256Verifier where Self == FixedKeyES256Verifier {
    package static var fixedKey: FixedKeyES256Verifier { FixedKeyES256Verifier() }
}

extension ES256Verifier where Self == OpenSSLES256Verifier {
    package static var openSSL: OpenSSLES256Verifier { OpenSSLES256Verifier() }
}

/// The deployment's choice of ES256 verifier, read from one variable by whoever needs it.
public enum ES256VerifierSetting {
    public static let variable = "RECEIPTGATE_ES256_FIXED_KEY"

    /// `on` or unset: the fixed-key path; `off`: OpenSSL's; nil for anything else.
    public static func verifier(for value: String?) -> (any ES256Verifier)? {
        switch value {
        case nil, "on": FixedKeyES256Verifier()
        case "off": OpenSSLES256Verifier()
        default: nil
        }
    }
}
