package import Foundation
import OpenSSLCrypto

/// Xsolla's webhook signature: `Authorization: Signature <hex>`, the SHA-1 of the raw body
/// followed by the project's secret key (Xsolla's webhook overview, "Sign requests"). Checked in
/// constant time before anything in the body is read.
package enum XsollaSignature {
    /// Whether `authorization` carries the signature of `body` under `secret`.
    static func isValid(authorization: String?, body: Data, secret: String) -> Bool {
        guard let authorization else { return false }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "signature" else { return false }
        let given = parts[1].trimmingCharacters(in: .whitespaces).lowercased()
        var signed = body
        signed.append(contentsOf: Array(secret.utf8))
        // OpenSSL failing to hash is a refusal, never a pass.
        guard let digest = try? SHA1.hash(signed) else { return false }
        let expected = Hex.encode(digest)
        // Lengths differ only for a malformed header; equal ones are compared without a timing leak.
        return ConstantTime.equals(Data(expected.utf8), Data(given.utf8))
    }

    /// The header Xsolla would send for `body` (the test fakes sign with it).
    package static func header(body: Data, secret: String) -> String {
        var signed = body
        signed.append(contentsOf: Array(secret.utf8))
        return "Signature " + Hex.encode((try? SHA1.hash(signed)) ?? Data())
    }
}
