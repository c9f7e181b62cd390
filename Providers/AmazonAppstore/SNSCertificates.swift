import Crypto
import Foundation
import HTTPClient
import ReceiptCore

/// SNS signing certificates by URL. Anyone can post a message naming any URL the rule allows, so
/// what a URL costs is bounded: a certificate is fetched once and kept until `lifetime` has passed
/// or it expires, whichever is first; a failed fetch is remembered for `failureLifetime` and
/// answered from memory meanwhile; messages naming a URL that is being fetched wait for that one
/// fetch; and at most `maxFetches` URLs are fetched at once: a message that would start another
/// is refused at once as retryable (SNS sends it again) instead of queueing behind them. Only URLs
/// that passed `SNSCertificateURLRule` get here.
actor SNSCertificates {
    private let http: HTTPClient
    private let lifetime: Duration
    private let failureLifetime: Duration
    private let maxFetches: Int
    private let now: @Sendable () -> Date
    private var known: [String: (key: PublicKey, until: Date)] = [:]
    private var failures: [String: (rejection: NotificationRejection, until: Date)] = [:]
    private var fetching: [String: Task<Result<Fetched, NotificationRejection>, Never>] = [:]
    /// SNS uses a handful of certificates at a time; a bound keeps a flood of rotating URLs cheap.
    private let maxKnown = 16
    /// Failures kept at most; past it the ones nearest their end are forgotten first. Refused
    /// fetches are already few (`maxFetches` at once), so this only caps memory.
    private let maxFailures = 1024

    init(http: HTTPClient, lifetime: Duration, failureLifetime: Duration, maxFetches: Int, now: @escaping @Sendable () -> Date) {
        self.http = http
        self.lifetime = lifetime
        self.failureLifetime = failureLifetime
        self.maxFetches = max(1, maxFetches)
        self.now = now
    }

    /// The certificate's RSA key. Throws `NotificationRejection`: retryable when the certificate
    /// cannot be fetched now (or too many others are being fetched), forged when what the URL
    /// serves is no usable certificate.
    func key(at url: String) async throws(NotificationRejection) -> PublicKey {
        let moment = now()
        if let entry = known[url], entry.until > moment { return entry.key }
        if let failure = failures[url], failure.until > moment { throw failure.rejection }
        let fetch: Task<Result<Fetched, NotificationRejection>, Never>
        if let running = fetching[url] {
            fetch = running
        } else {
            guard fetching.count < maxFetches else {
                throw NotificationRejection(.retryable, reason: "SNS_CERTIFICATE_BUSY",
                                            message: "too many SNS signing certificates are being fetched now")
            }
            // Not a child of the caller's task: a caller that gives up must not cancel the fetch
            // others wait for. The client's timeout bounds it.
            fetch = Task { [http] in
                let outcome = await Self.fetch(url, http: http, now: moment)
                await self.finish(url, outcome)
                return outcome
            }
            fetching[url] = fetch
        }
        return try await fetch.value.get().key
    }

    /// Files the outcome of a fetch before anyone is given it.
    private func finish(_ url: String, _ outcome: Result<Fetched, NotificationRejection>) {
        fetching[url] = nil
        let moment = now()
        switch outcome {
        case .success(let fetched):
            if known.count >= maxKnown { known = known.filter { $0.value.until > moment } }
            if known.count >= maxKnown { known.removeAll() }
            known[url] = (fetched.key, min(moment.addingTimeInterval(Self.seconds(lifetime)), fetched.notAfter))
        case .failure(let rejection):
            if failures.count >= maxFailures { failures = failures.filter { $0.value.until > moment } }
            // Still full: the one nearest its end makes room.
            if failures.count >= maxFailures, let oldest = failures.min(by: { $0.value.until < $1.value.until })?.key { failures[oldest] = nil }
            failures[url] = (rejection, moment.addingTimeInterval(Self.seconds(failureLifetime)))
        }
    }

    struct Fetched: Sendable {
        let key: PublicKey
        let notAfter: Date
    }

    /// One GET, its answer read as a current RSA certificate.
    private static func fetch(_ url: String, http: HTTPClient, now moment: Date) async -> Result<Fetched, NotificationRejection> {
        let response: HTTPClient.Response
        do { response = try await http.send(HTTPClient.Request(url: url)) } catch {
            let code = (error as? HTTPClientError)?.code.rawValue ?? "cancelled"
            return .failure(NotificationRejection(.retryable, reason: "SNS_CERTIFICATE_UNAVAILABLE",
                                                  message: "the SNS signing certificate could not be fetched (\(code))"))
        }
        guard response.status == 200 else {
            return .failure(NotificationRejection(.retryable, reason: "SNS_CERTIFICATE_UNAVAILABLE",
                                                  message: "the SNS signing certificate could not be fetched (HTTP \(response.status))"))
        }
        guard let certificate = try? Certificate.parsePEM(String(decoding: response.body, as: UTF8.self)).first else {
            return .failure(NotificationRejection(.forged, reason: "SNS_CERTIFICATE_INVALID", message: "the signing certificate URL serves no PEM certificate"))
        }
        guard let key = try? certificate.publicKey, key.isRSA, let notAfter = certificate.notValidAfter, notAfter > moment,
              certificate.notValidBefore.map({ $0 <= moment }) ?? false else {
            return .failure(NotificationRejection(.forged, reason: "SNS_CERTIFICATE_INVALID", message: "the signing certificate is not a current RSA certificate"))
        }
        return .success(Fetched(key: key, notAfter: notAfter))
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
