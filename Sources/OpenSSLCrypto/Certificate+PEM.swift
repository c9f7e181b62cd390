import Foundation

extension Certificate {
    /// The certificate as one PEM block (base64 DER in 64-character lines), the form
    /// `Certificate.parsePEM`, `openssl x509` and RECEIPTGATE_APPLE_ROOT_CERTS read.
    public var pemEncoded: String {
        "-----BEGIN CERTIFICATE-----\n" + derEncoded.base64EncodedString(options: .lineLength64Characters)
            + "\n-----END CERTIFICATE-----\n"
    }
}
