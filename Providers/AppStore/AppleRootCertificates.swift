public import Foundation
public import OpenSSLCrypto

/// The trust roots for App Store signed data.
public enum AppleRootCertificates {
    /// Apple Root CA - G3 (DER, base64), as Apple publishes it at
    /// https://www.apple.com/certificateauthority/AppleRootCA-G3.cer. SHA-256 fingerprint
    /// 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79
    /// (checked by a test). Public: a trust anchor, not a secret.
    static let appleRootCAG3 = """
        MIICQzCCAcmgAwIBAgIILcX8iNLFS5UwCgYIKoZIzj0EAwMwZzEbMBkGA1UEAwwSQXBwbGUgUm9vdCBDQSAtIEczMSYwJAYDVQQLDB1BcHBsZSBD\
        ZXJ0aWZpY2F0aW9uIEF1dGhvcml0eTETMBEGA1UECgwKQXBwbGUgSW5jLjELMAkGA1UEBhMCVVMwHhcNMTQwNDMwMTgxOTA2WhcNMzkwNDMwMTgx\
        OTA2WjBnMRswGQYDVQQDDBJBcHBsZSBSb290IENBIC0gRzMxJjAkBgNVBAsMHUFwcGxlIENlcnRpZmljYXRpb24gQXV0aG9yaXR5MRMwEQYDVQQK\
        DApBcHBsZSBJbmMuMQswCQYDVQQGEwJVUzB2MBAGByqGSM49AgEGBSuBBAAiA2IABJjpLz1AcqTtkyJygRMc3RCV8cWjTnHcFBbZDuWmBSp3ZHtf\
        TjjTuxxEtX/1H7YyYl3J6YRbTzBPEVoA/VhYDKX1DyxNB0cTddqXl5dvMVztK517IDvYuVTZXpmkOlEKMaNCMEAwHQYDVR0OBBYEFLuw3qFYM4ia\
        pIqZ3r6966/ayySrMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQDAgEGMAoGCCqGSM49BAMDA2gAMGUCMQCD6cHEFl4aXTQY2e3v9GwOAEZL\
        uN+yRhHFD/3meoyhpmvOwgPUnPWTxnS4at+qIxUCMG1mihDK1A3UT82NQz60imOlM27jbdoXt2QfyFMm+YhidDkLF1vLUagM6BgD56KyKA==
        """

    /// The embedded Apple Root CA - G3.
    public static func appleRoot() throws -> Certificate {
        guard let der = Base64.decode(appleRootCAG3) else {
            throw CryptoError(.invalidCertificate, "embedded root is not base64")
        }
        return try Certificate(derEncoded: der)
    }

    /// `RECEIPTGATE_APPLE_ROOT_CERTS` (comma-separated paths, DER or PEM) if set, else Apple's root.
    public static func configured(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> [Certificate] {
        try certificates(listedIn: "RECEIPTGATE_APPLE_ROOT_CERTS", environment: environment) ?? [try appleRoot()]
    }

    /// The certificates in the files a variable lists (comma-separated paths, DER or PEM), or nil if it is unset.
    static func certificates(listedIn variable: String, environment: [String: String]) throws -> [Certificate]? {
        guard let list = environment[variable]?.trimmingCharacters(in: .whitespaces), !list.isEmpty else { return nil }
        return try list.split(separator: ",").flatMap { path -> [Certificate] in
            let trimmed = path.trimmingCharacters(in: .whitespaces)
            guard let contents = FileManager.default.contents(atPath: trimmed) else {
                throw CryptoError(.invalidCertificate, "\(variable): cannot read \(trimmed)")
            }
            do {
                return try Certificate.parseFile(contents: contents)
            } catch {
                throw CryptoError(.invalidCertificate, "\(variable): \(trimmed) is not a DER or PEM certificate")
            }
        }
    }
}
