import Foundation
import OpenSSLCrypto
import TestSupport

// A process that uses TestKeys as a test process does, then exits at once: one key asked for and
// used, while the rest of a run's keys would still be wanted later. OpenSSLCryptoTests runs it and
// expects exit status 0 every time; a key being made when the process exits (OpenSSL's exit
// handlers tearing down what the key generation uses) shows up as a crash.
do {
    let key = try TestKeys.rsa(.googleServiceAccount)
    let message = Data("exit probe".utf8)
    guard try key.publicKey.isValidRS256(signature: try key.signRS256(message), for: message) else { exit(2) }
} catch {
    FileHandle.standardError.write(Data("TestKeysExitProbe: \(error)\n".utf8))
    exit(1)
}
exit(0)
