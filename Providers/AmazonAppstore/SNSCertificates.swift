import Crypto
import Foundation
import HTTPClient
import ReceiptCore

/// SNS signing certificates by URL, fetched once and kept until `lifetime` has passed or the
/// certificate expires, whichever is first. Only URLs that passed `SNSCertificateURLRule` get here.
actor SNSCertificates {
    private let http: HTTPClient
    private let lifetime: Duration
    private let now: @Sendable () -> Date
    private var cached: [String: (key: PublicKey, until: Date)] = [:]
    /// SNS uses a handful of certificates at a time; a bound keeps a flood of rotating URLs cheap.
    private let maxEntries = 16

    init(http: HTTPClient, lifetime: Duration, now: @escaping @Sendable () -> Date) {
        self.http = http
        self.lifetime = lifetime
        self.now = now
    }

    /// The certificate's RSA key. Throws `NotificationRejection`: retryable when the certificate
    /// cannot be fetched now, forged when what the URL serves is no usable certificate.
    func key(at url: String) async throws -> PublicKey {
        let moment = now()
        if let entry = cached[url], entry.until > moment { return entry.key }
        let response: HTTPClient.Response
        do { response = try await http.send(HTTPClient.Request(url: url)) } catch {
            let code = (error as? HTTPClientError)?.code.rawValue ?? "cancelled"
            throw NotificationRejection(.retryable, reason: "SNS_CERTIFICATE_UNAVAILABLE", message: "the SNS signing certificate could not be fetched (\(code))")
        }
        guard response.status == 200 else {
            throw NotificationRejection(.retryable, reason: "SNS_CERTIFICATE_UNAVAILABLE",
                                        message: "the SNS signing certificate could not be fetched (HTTP \(response.status))")
        }
        guard let certificate = try? Certificate.parsePEM(String(decoding: response.body, as: UTF8.self)).first else {
            throw NotificationRejection(.forged, reason: "SNS_CERTIFICATE_INVALID", message: "the signing certificate URL serves no PEM certificate")
        }
        guard let key = try? certificate.publicKey, key.isRSA, let notAfter = certificate.notValidAfter, notAfter > moment,
              certificate.notValidBefore.map({ $0 <= moment }) ?? false else {
            throw NotificationRejection(.forged, reason: "SNS_CERTIFICATE_INVALID", message: "the signing certificate is not a current RSA certificate")
        }
        if cached.count >= maxEntries { cached = cached.filter { $0.value.until > moment } }
        if cached.count >= maxEntries { cached.removeAll() }
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        cached[url] = (key, min(moment.addingTimeInterval(seconds), notAfter))
        return key
    }
}
