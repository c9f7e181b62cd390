import Foundation
public import OpenSSLCrypto

/// The trust roots for StoreKit 1 app receipts, which Apple signs (PKCS#7) under its 2006 RSA root,
/// not under Apple Root CA - G3.
extension AppleRootCertificates {
    /// Apple Root CA (C=US, O=Apple Inc., OU=Apple Certification Authority, CN=Apple Root CA; RSA,
    /// 2006-04-25 to 2035-02-09), DER in base64, as Apple publishes it at
    /// https://www.apple.com/appleca/AppleIncRootCertificate.cer and as receipts carry it. SHA-256
    /// fingerprint B0:B1:73:0E:CB:C7:FF:45:05:14:2C:49:F1:29:5E:6E:DA:6B:CA:ED:7E:2C:68:C5:BE:91:B5:A1:10:01:F0:24
    /// (checked by a test). It issued both intermediates receipts have been signed under: Apple
    /// Worldwide Developer Relations CA (G1, SHA-1 era) and WWDR G5 (SHA-256).
    static let appleRootCA = """
        MIIEuzCCA6OgAwIBAgIBAjANBgkqhkiG9w0BAQUFADBiMQswCQYDVQQGEwJVUzETMBEGA1UEChMKQXBwbGUgSW5jLjEmMCQGA1UECxMdQXBwbGUg\
        Q2VydGlmaWNhdGlvbiBBdXRob3JpdHkxFjAUBgNVBAMTDUFwcGxlIFJvb3QgQ0EwHhcNMDYwNDI1MjE0MDM2WhcNMzUwMjA5MjE0MDM2WjBiMQsw\
        CQYDVQQGEwJVUzETMBEGA1UEChMKQXBwbGUgSW5jLjEmMCQGA1UECxMdQXBwbGUgQ2VydGlmaWNhdGlvbiBBdXRob3JpdHkxFjAUBgNVBAMTDUFw\
        cGxlIFJvb3QgQ0EwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQDkkakJH5HbHkdQ6wXtXnmELes2oldMVeyLGYne+Uts9QerIjAC6Bg+\
        +FAJ039BqJj50cpmnCRrEdCju+QbKsMflZ56DKRHi1vUFjczy8QPTc4UadHJGXL1XQ7Vf1+b8iUDulWPTV0N8WQ1IxVLFVkds5T39pyez1C6wVhQ\
        Z48ItCD3y6wsIG9wtj8BMIy3Q88PnT3zK0koGsj+zrW5DtleHNbLPbU6rfQPDgCSC7EhFi501TwN22IWq6NxkkdTVcGvL0Gz+PvjcM3mo0xFfh9M\
        a1CWQYnEdGILEINBhzOKgbEwWOxaBDKMaLOPHd5lc/9nXmW8Sdh2nzMUZaF3lMktAgMBAAGjggF6MIIBdjAOBgNVHQ8BAf8EBAMCAQYwDwYDVR0T\
        AQH/BAUwAwEB/zAdBgNVHQ4EFgQUK9BpR5R2Cf70a40uQKb3R01/CF4wHwYDVR0jBBgwFoAUK9BpR5R2Cf70a40uQKb3R01/CF4wggERBgNVHSAE\
        ggEIMIIBBDCCAQAGCSqGSIb3Y2QFATCB8jAqBggrBgEFBQcCARYeaHR0cHM6Ly93d3cuYXBwbGUuY29tL2FwcGxlY2EvMIHDBggrBgEFBQcCAjCB\
        thqBs1JlbGlhbmNlIG9uIHRoaXMgY2VydGlmaWNhdGUgYnkgYW55IHBhcnR5IGFzc3VtZXMgYWNjZXB0YW5jZSBvZiB0aGUgdGhlbiBhcHBsaWNh\
        YmxlIHN0YW5kYXJkIHRlcm1zIGFuZCBjb25kaXRpb25zIG9mIHVzZSwgY2VydGlmaWNhdGUgcG9saWN5IGFuZCBjZXJ0aWZpY2F0aW9uIHByYWN0\
        aWNlIHN0YXRlbWVudHMuMA0GCSqGSIb3DQEBBQUAA4IBAQBcNplMLXi37Yyb3PN3m/J20ncwT8EfhYOFG5k9RzfyqZtAjizUsZAS2L70c5vu0mQP\
        y3lPNNiiPvl4/2vIB+x9OYOLUyDTOMSxv5pPCmv/K/xZpwUJfBdAVhEedNO3iyM7R6PVbyTi69G3cN8PReEnyvFteO3ntRcXqNx+IjXKJdXZD9Zr\
        1KIkIxH3oayPc4FgxhtbCS+SsvhESPBgOJ4V9T0mZyCKM2r3DYLP3uujL/lTaltkwGMzd/c6ByxW69oPIQ7aunMZT7XZNn/Bh1XZp5m5MkL72NVx\
        nn6hUrcbvZNCJBIqxw8dtk2cXmPIS4AXUKqK1drk/NAJBzewdXUh
        """

    /// The embedded Apple Root CA (2006).
    public static func appleReceiptRoot() throws -> Certificate {
        guard let der = Base64.decode(appleRootCA) else {
            throw CryptoError(.invalidCertificate, "embedded receipt root is not base64")
        }
        return try Certificate(derEncoded: der)
    }

    /// The embedded receipt root, or no root at all (every receipt refused) should it fail to
    /// parse, which a test rules out: the default of `AppStoreConfiguration.receiptTrustRoots`.
    package static var defaultReceiptRoots: [Certificate] {
        (try? appleReceiptRoot()).map { [$0] } ?? []
    }

    /// `RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS` (comma-separated paths, DER or PEM) if set, else Apple Root CA.
    package static func configuredReceiptRoots(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> [Certificate] {
        try certificates(listedIn: "RECEIPTGATE_APPLE_RECEIPT_ROOT_CERTS", environment: environment) ?? [
            try appleReceiptRoot()
        ]
    }
}
