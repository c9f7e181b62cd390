public import Foundation
package import HTTPClient
public import ReceiptCore

extension StoreID {
    package static let amazonAppstore = StoreID(rawValue: "amazon_appstore")
}

/// Amazon Appstore as a store provider: receipts proven with the Receipt Verification Service
/// (RVS), and Real-Time Notifications delivered by Amazon SNS, each re-read from RVS.
public struct AmazonAppstoreProvider: StoreProvider, NotificationReceiving {
    public let store = StoreID.amazonAppstore
    public let notificationPath = "/v1/notifications/amazon-appstore"
    public let configuration: AmazonAppstoreConfiguration
    let rvs: RVSClient
    let certificates: SNSCertificates
    let certificateRule: SNSCertificateURLRule
    let logger: Logger
    let now: @Sendable () -> Date

    /// Client settings: the shared secret is sealed (a per-client credential).
    public enum Setting {
        public static let sharedSecret = "amazon_appstore.shared_secret"
        /// How the operator sets the secret, named in errors that ask for it.
        package static let sharedSecretFlag = "--amazon-shared-secret"
    }

    /// `http` calls RVS; SNS signing certificates are fetched by `certificateHTTP`, by default a
    /// `certificateClient` of its own. Separate clients have separate transfer slots:
    /// certificate URLs come from unauthenticated messages, and a flood of them must not hold the
    /// slots a purchase's verification needs.
    /// Throws `ConfigurationInvalid` when the certificate URL pattern is not a regular expression.
    package init(
        configuration: AmazonAppstoreConfiguration, http: HTTPClient = HTTPClient(),
        certificateHTTP: HTTPClient? = nil, logger: Logger = Logger(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        rvs = RVSClient(baseURL: configuration.rvsURL, http: http, retry: configuration.rvsRetry)
        do { certificateRule = try SNSCertificateURLRule(pattern: configuration.snsCertURLPattern) } catch {
            throw ConfigurationInvalid(
                variable: "RECEIPTGATE_AMAZON_SNS_CERT_URL_PATTERN", problem: "is not a valid regular expression")
        }
        certificates = SNSCertificates(
            http: certificateHTTP ?? Self.certificateClient(threads: configuration.maxCertificateFetches),
            lifetime: configuration.certificateCacheLifetime,
            failureLifetime: configuration.certificateFailureLifetime,
            maxFetches: configuration.maxCertificateFetches, now: now)
    }

    /// The client for SNS signing certificates: a transfer slot for each fetch that may run at
    /// once (none waits for a slot), one attempt (SNS sends a refused message again), a short
    /// timeout and a response no bigger than a certificate needs.
    package static func certificateClient(threads: Int, timeout: Duration = .seconds(5)) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.concurrentTransfers = max(1, threads)
        configuration.retry = .none
        configuration.timeout = timeout
        configuration.connectTimeout = .seconds(3)
        configuration.maxResponseBytes = 64 << 10
        return HTTPClient(configuration)
    }

    /// From the environment; throws `ConfigurationInvalid`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> AmazonAppstoreProvider {
        try AmazonAppstoreProvider(
            configuration: try AmazonAppstoreConfiguration.fromEnvironment(environment), now: now)
    }

    /// Verify, notifications, and reading a quiet subscription back from RVS; Amazon has no order
    /// lookup, acknowledgement or history to offer.
    public var registration: StoreRegistration {
        StoreRegistration(Self.declaration, verifier: self, notifications: self, subscriptionReader: self)
    }

    /// The client's shared secret, or a verifier error that tells the operator how to set it.
    static func sharedSecret(_ credentials: [String: String]) throws(StoreAPIError) -> String {
        guard let secret = credentials[Setting.sharedSecret], !secret.isEmpty else {
            throw AmazonAPIErrors.notConfigured("this client has no Amazon shared secret")
        }
        return secret
    }
}
