public import Crypto

extension ServiceConfiguration {
    /// The ES256 verifier the App Store provider is given, picked once at start.
    public var es256Verifier: any ES256Verifier {
        es256FixedKey ? FixedKeyES256Verifier() : OpenSSLES256Verifier()
    }
}
