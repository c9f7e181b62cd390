import Foundation
import ReceiptCore

/// The Amazon Appstore provider's settings, read once from the environment.
public struct AmazonAppstoreConfiguration: Sendable {
    /// The Receipt Verification Service; the Cloud Sandbox is the same host under `/sandbox`.
    package var rvsURL = "https://appstore-sdk.amazon.com"
    /// What an SNS message's `SigningCertURL` must match in full before it is fetched: the
    /// certificate decides what counts as Amazon's signature, so only Amazon's own SNS hosts and
    /// their certificate paths may supply it.
    package var snsCertURLPattern = Self.defaultSNSCertURLPattern
    /// How long a fetched signing certificate is trusted before it is fetched again (never past
    /// the certificate's own expiry).
    package var certificateCacheLifetime: Duration = .seconds(6 * 3600)
    /// How long a certificate URL that could not be fetched (or served no usable certificate) is
    /// remembered: messages naming it meanwhile are answered from memory, none fetches it again.
    /// Short, because SNS's own retries of a genuine message come tens of seconds apart.
    package var certificateFailureLifetime: Duration = .seconds(30)
    /// Certificate URLs fetched at once. A message that needs another fetch beyond these is
    /// answered 503 at once (SNS sends it again), never queued behind them.
    package var maxCertificateFetches = 4
    /// RVS calls answered 410, 429 or 5xx (or not answered) are tried this many times in all,
    /// with exponential back-off between them, never past the request's deadline.
    package var rvsRetry = Retry()

    public struct Retry: Sendable {
        package var maxAttempts = 3
        package var baseDelay: Duration = .milliseconds(200)
        package var maxDelay: Duration = .seconds(2)
        /// A `Retry-After` longer than this ends the retries: the caller is told to come back.
        package var maxRetryAfter: Duration = .seconds(5)

        package init(maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(2)) {
            self.maxAttempts = maxAttempts
            self.baseDelay = baseDelay
            self.maxDelay = maxDelay
        }
    }

    /// https, `sns.<region>.amazonaws.com` (or `.com.cn`), `/SimpleNotificationService-<hex>.pem`,
    /// nothing more. The label after `sns.` must be shaped like a region (`us-east-1`,
    /// `us-gov-west-1`, `cn-north-1`): `sns.s3.amazonaws.com` and its kin are S3 bucket hosts,
    /// where anyone who owns the bucket `sns` could serve a certificate.
    package static let defaultSNSCertURLPattern =
        #"https://sns\.[a-z]{2}(-gov)?-[a-z]+-[0-9]+\.amazonaws\.com(\.cn)?/SimpleNotificationService-[0-9a-f]+\.pem"#

    package init() {}

    /// Whether an SNS `SigningCertURL` passes `snsCertURLPattern` (in full); false for a pattern
    /// that is not a regular expression.
    package func allowsSNSCertificateURL(_ url: String) -> Bool {
        (try? SNSCertificateURLRule(pattern: snsCertURLPattern))?.allows(url) ?? false
    }

    public static func fromEnvironment(_ environment: [String: String]) throws -> AmazonAppstoreConfiguration {
        let settings = EnvironmentSettings(environment)
        var configuration = AmazonAppstoreConfiguration()
        configuration.rvsURL = try settings.url("RECEIPTGATE_AMAZON_RVS_URL", default: configuration.rvsURL)
        if let pattern = settings.value("RECEIPTGATE_AMAZON_SNS_CERT_URL_PATTERN") {
            guard (try? SNSCertificateURLRule(pattern: pattern)) != nil else {
                throw ConfigurationInvalid(
                    variable: "RECEIPTGATE_AMAZON_SNS_CERT_URL_PATTERN", problem: "is not a valid regular expression")
            }
            configuration.snsCertURLPattern = pattern
        }
        return configuration
    }
}

/// The whole-URL match a signing certificate's URL must pass.
struct SNSCertificateURLRule: Sendable {
    let pattern: String

    /// Throws when `pattern` is not a regular expression.
    init(pattern: String) throws {
        self.pattern = pattern
        _ = try Regex(pattern)
    }

    /// Whole-string match only: a pattern that fits a prefix (`https://sns.x.amazonaws.com.evil.net/...`)
    /// or a URL with a query or fragment tacked on is no match. Compiled per call (`Regex` is not
    /// Sendable, and a notification is rare enough for that to cost nothing).
    func allows(_ url: String) -> Bool {
        guard url.utf8.count <= 1024, let regex = try? Regex(pattern) else { return false }
        return (try? regex.wholeMatch(in: url)) != nil
    }
}
