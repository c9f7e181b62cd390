import Foundation
import HTTPClient
import OpenSSLCrypto
import ReceiptCore

/// SNS signing certificates by URL. Anyone can post a message naming any URL the rule allows, so
/// what a URL costs is bounded: a certificate is fetched once and kept until `lifetime` has passed
/// or it expires, whichever is first; a failed fetch is remembered for `failureLifetime` and
/// answered from memory meanwhile; messages naming a URL that is being fetched wait for that one
/// fetch; and at most `maxFetches` URLs are fetched at once: a message that would start another
/// is refused at once as retryable (SNS sends it again) instead of queueing behind them. Only URLs
/// that passed `SNSCertificateURLRule` get here.
final class SNSCertificates: Sendable {
    private let http: HTTPClient
    private let lifetime: Duration
    private let now: @Sendable () -> Date
    /// SNS uses a handful of certificates at a time; a bound keeps a flood of rotating URLs cheap.
    private let cache: ExpiringCache<String, PublicKey>

    init(
        http: HTTPClient, lifetime: Duration, failureLifetime: Duration, maxFetches: Int,
        now: @escaping @Sendable () -> Date
    ) {
        self.http = http
        self.lifetime = lifetime
        self.now = now
        // Refused fetches are already few (`maxFetches` at once): the failures' bound only caps memory.
        cache = ExpiringCache(
            now: now, maxEntries: 16, failureLifetime: Self.seconds(failureLifetime), maxFailures: 1024,
            maxFetches: maxFetches,
            busy: {
                NotificationRejection(
                    .retryable, reason: "SNS_CERTIFICATE_BUSY",
                    message: "too many SNS signing certificates are being fetched now")
            },
            remembersFailure: { $0 is NotificationRejection })
    }

    /// The certificate's RSA key. Throws `NotificationRejection`: retryable when the certificate
    /// cannot be fetched now (or too many others are being fetched), forged when what the URL
    /// serves is no usable certificate.
    func key(at url: String) async throws(NotificationRejection) -> PublicKey {
        let http = http, now = now, lifetime = lifetime
        do {
            return try await cache.value(for: url) {
                let moment = now()
                let fetched = try await Self.fetch(url, http: http, now: moment).get()
                return (fetched.key, min(moment.addingTimeInterval(Self.seconds(lifetime)), fetched.notAfter))
            }
        } catch let rejection as NotificationRejection {
            throw rejection
        } catch {
            throw NotificationRejection(
                .retryable, reason: "SNS_CERTIFICATE_UNAVAILABLE",
                message: "the SNS signing certificate could not be fetched")
        }
    }

    struct Fetched: Sendable {
        let key: PublicKey
        let notAfter: Date
    }

    /// One GET, its answer read as a current RSA certificate.
    private static func fetch(
        _ url: String, http: HTTPClient, now moment: Date
    ) async -> Result<Fetched, NotificationRejection> {
        let response: HTTPClient.Response
        do { response = try await http.send(HTTPClient.Request(url: url)) } catch {
            let code = (error as? HTTPClientError)?.code.rawValue ?? "cancelled"
            return .failure(
                NotificationRejection(
                    .retryable, reason: "SNS_CERTIFICATE_UNAVAILABLE",
                    message: "the SNS signing certificate could not be fetched (\(code))"))
        }
        guard response.status == 200 else {
            return .failure(
                NotificationRejection(
                    .retryable, reason: "SNS_CERTIFICATE_UNAVAILABLE",
                    message: "the SNS signing certificate could not be fetched (HTTP \(response.status))"))
        }
        guard let certificate = try? Certificate.parsePEM(String(decoding: response.body, as: UTF8.self)).first else {
            return .failure(
                NotificationRejection(
                    .forged, reason: "SNS_CERTIFICATE_INVALID",
                    message: "the signing certificate URL serves no PEM certificate"))
        }
        guard let key = try? certificate.publicKey, key.isRSA, let notAfter = certificate.notValidAfter,
            notAfter > moment,
            certificate.notValidBefore.map({ $0 <= moment }) ?? false
        else {
            return .failure(
                NotificationRejection(
                    .forged, reason: "SNS_CERTIFICATE_INVALID",
                    message: "the signing certificate is not a current RSA certificate"))
        }
        return .success(Fetched(key: key, notAfter: notAfter))
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
