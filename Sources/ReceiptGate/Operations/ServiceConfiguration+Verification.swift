public import OpenSSLCrypto

extension ServiceConfiguration {
    /// The ES256 verifier `RECEIPTGATE_ES256_FIXED_KEY` picks (the stores read the same variable).
    public var es256Verifier: any ES256Verifier {
        es256FixedKey ? FixedKeyES256Verifier() : OpenSSLES256Verifier()
    }
}
