import OpenSSLCrypto
import TestSupport

/// A key that is not the fake SNS topic's, for an impostor publisher.
enum TestKeysAccess {
    static func unrelated() throws -> PrivateKey { try TestKeys.rsa(.unrelated) }
}
