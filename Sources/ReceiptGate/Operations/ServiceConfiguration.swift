public import Foundation
public import ReceiptCore

/// Everything ReceiptGate reads from its environment, read once at start. Each variable is
/// documented in docs/configuration.md; a bad value stops start-up naming the variable.
public struct ServiceConfiguration: Sendable {
    public var host = "127.0.0.1"
    public var port = 8080
    /// libpq connection string or URI; nil starts the embedded cluster under `dataDirectory`.
    public var databaseURL: String?
    /// A standby for the ledger read API (DATABASE_READ_URL); nil reads from `databaseURL`.
    public var databaseReadURL: String?
    public var dataDirectory = URL(fileURLWithPath: ".receiptgate")
    /// 32 bytes; nil means "use (or create) `<dataDirectory>/master.key`".
    public var masterKey: Data?
    public var logLevel: Logger.Level = .info
    public var databasePoolSize = 8
    public var httpThreads = max(2, ProcessInfo.processInfo.activeProcessorCount)
    public var maxBodyBytes = 1 << 20
    public var requestTimeoutSeconds = 30
    public var maxConnectionsPerIP = 256
    public var maxConnections = 1024
    public var requestReceiveTimeoutSeconds = 30
    public var shutdownGraceSeconds = 10
    /// How long an authenticated client may be served from memory before its row is read again,
    /// notification or not (`RECEIPTGATE_CLIENT_CACHE_SECONDS`; 0 reads the row every time): the
    /// most a disabled client or a rotated secret can go on working if a notification is missed.
    public var clientCacheSeconds = 5
    /// How long a refund request's answer waits for the game's consumption report
    /// (`RECEIPTGATE_REFUND_REVIEW_DELAY`); it always goes before the store's deadline.
    public var refundReviewDelaySeconds = 3600
    /// How far behind the read standby may be and still answer reads (`RECEIPTGATE_READ_MAX_LAG_MS`);
    /// further behind, reads go to the primary.
    public var readMaxLagMilliseconds = 1000
    /// How often grants past their end are removed and told as `entitlement.expired`
    /// (`RECEIPTGATE_ENTITLEMENT_SWEEP_INTERVAL`); reads leave them out on time either way.
    public var entitlementSweepSeconds = 30
    /// How often reports owed for purchases made outside a store's billing are looked for (a
    /// sale arrived, a deadline passed, a refund); a store's `UNREPORTED` notice is acted on at once.
    public var externalPurchaseSweepInterval: Duration = .seconds(60)
    /// How often the catalog refreshes still owed (cut short, failed, or their caller gone) are looked for.
    public var catalogRefreshSeconds = 5
    /// Days verification attempts, sent outbox messages and raw notification bodies are kept
    /// (`RECEIPTGATE_RETAIN_ATTEMPTS_DAYS`, `…_OUTBOX_DAYS`, `…_NOTIFICATIONS_DAYS`; 0 keeps them).
    public var retainAttemptsDays = 90
    public var retainOutboxDays = 30
    public var retainNotificationsDays = 90
    /// How reconciliation reads back subscriptions that went quiet (`RECEIPTGATE_RECONCILE_SUBSCRIPTIONS_*`).
    public var quietSubscriptions = QuietSubscriptionSettings()
    public var openAPIPath: String?
    /// Bearer token of the /admin API; unset, the admin API is off.
    public var adminToken: String?
    /// Where `/metrics` and `/admin` are served instead of the public listener (`RECEIPTGATE_ADMIN_ADDR`).
    public var adminAddress: ListenAddress?
    /// Outbound deliveries (webhooks, refund callbacks, deliveries) may reach loopback and private
    /// addresses (`RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE=on`; tests and single-host set-ups).
    public var outboundAllowPrivate = false
    /// ES256 with a fixed-base table for a key in steady use (`RECEIPTGATE_ES256_FIXED_KEY=on`),
    /// or OpenSSL's verifier for every signature (`off`): see `es256Verifier`.
    public var es256FixedKey = true
    /// Proxies whose `X-Forwarded-For` is believed (`RECEIPTGATE_TRUSTED_PROXIES`).
    public var trustedProxies: [TrustedProxy] = []
    /// Per-policy overrides of the routes' rate limits (`RECEIPTGATE_RATE_LIMITS`).
    public var rateLimits: [String: RateLimitOverride] = [:]
    /// Accounts and OpenID tokens: see ServiceConfiguration+Accounts.swift.
    public var publicURL: String?
    public var accessTokenLifetimeSeconds = 900
    public var smtp: SMTPSettings?

    public init() {}

    /// A variable with a bad value; providers report theirs with the same type.
    public typealias Invalid = ConfigurationInvalid

    /// No embedded database where the configuration points, for a command that may not create one.
    static func missingDataDirectory(_ directory: URL) -> Invalid {
        Invalid(
            variable: "RECEIPTGATE_DATA_DIR",
            problem: """
                no ReceiptGate data directory at \(directory.standardizedFileURL.path) (its database would be in \
                \(directory.appendingPathComponent("postgres").standardizedFileURL.path)); run the command where the service runs, point \
                RECEIPTGATE_DATA_DIR at the service's data directory (or DATABASE_URL at its database), or create one with `receiptgate init`
                """)
    }

    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> ServiceConfiguration {
        var configuration = ServiceConfiguration()
        let settings = EnvironmentSettings(environment)
        func value(_ name: String) -> String? { settings.value(name) }
        func integer(_ name: String, in range: ClosedRange<Int>) throws -> Int? {
            guard let raw = value(name) else { return nil }
            guard let number = Int(raw), range.contains(number) else {
                throw Invalid(
                    variable: name,
                    problem: "must be a whole number from \(range.lowerBound) to \(range.upperBound), got \"\(raw)\"")
            }
            return number
        }

        if let host = value("RECEIPTGATE_HOST") {
            guard host.range(of: #"^[0-9.]+$|^[0-9a-fA-F:]+$|^localhost$"#, options: .regularExpression) != nil else {
                throw Invalid(
                    variable: "RECEIPTGATE_HOST",
                    problem: "must be an IPv4 or IPv6 address (e.g. 127.0.0.1 or 0.0.0.0), got \"\(host)\"")
            }
            configuration.host = host
        }
        if let port = try integer("RECEIPTGATE_PORT", in: 0...65_535) { configuration.port = port }
        configuration.databaseURL = value("DATABASE_URL")
        configuration.databaseReadURL = value("DATABASE_READ_URL")
        if let directory = value("RECEIPTGATE_DATA_DIR") {
            configuration.dataDirectory = URL(fileURLWithPath: directory)
        }
        if let key = value("RECEIPTGATE_MASTER_KEY") {
            guard let bytes = Data(base64Encoded: key), bytes.count == 32 else {
                throw Invalid(
                    variable: "RECEIPTGATE_MASTER_KEY",
                    problem: "must be the base64 encoding of exactly 32 bytes (e.g. `openssl rand -base64 32`)")
            }
            configuration.masterKey = bytes
        }
        if let level = value("RECEIPTGATE_LOG_LEVEL") {
            guard let parsed = Logger.Level(rawValue: level.lowercased()) else {
                throw Invalid(
                    variable: "RECEIPTGATE_LOG_LEVEL",
                    problem: "must be one of debug, info, warning, error; got \"\(level)\"")
            }
            configuration.logLevel = parsed
        }
        try configuration.readLimits(integer: integer)
        configuration.openAPIPath = value("RECEIPTGATE_OPENAPI_PATH")
        try configuration.readOperatorSettings(value: value)
        configuration.trustedProxies = try value("RECEIPTGATE_TRUSTED_PROXIES").map(parseTrustedProxies) ?? []
        configuration.rateLimits = try value("RECEIPTGATE_RATE_LIMITS").map(parseRateLimits) ?? [:]
        try configuration.readAccountSettings(value: value, integer: integer)
        return configuration
    }
}

extension ServiceConfiguration {
    /// Sizes, counts and times (`RECEIPTGATE_DB_POOL_SIZE`, `..._HTTP_THREADS`, ...).
    mutating func readLimits(integer: (String, ClosedRange<Int>) throws -> Int?) throws {
        if let size = try integer("RECEIPTGATE_DB_POOL_SIZE", 1...200) { databasePoolSize = size }
        if let threads = try integer("RECEIPTGATE_HTTP_THREADS", 1...256) { httpThreads = threads }
        if let bytes = try integer("RECEIPTGATE_MAX_BODY_BYTES", 1_024...(64 << 20)) { maxBodyBytes = bytes }
        if let seconds = try integer("RECEIPTGATE_REQUEST_TIMEOUT_SECONDS", 1...600) { requestTimeoutSeconds = seconds }
        if let count = try integer("RECEIPTGATE_MAX_CONNECTIONS_PER_IP", 1...100_000) { maxConnectionsPerIP = count }
        if let count = try integer("RECEIPTGATE_MAX_CONNECTIONS", 1...100_000) { maxConnections = count }
        if let seconds = try integer("RECEIPTGATE_REQUEST_RECEIVE_TIMEOUT_SECONDS", 1...600) {
            requestReceiveTimeoutSeconds = seconds
        }
        if let seconds = try integer("RECEIPTGATE_SHUTDOWN_GRACE_SECONDS", 0...600) { shutdownGraceSeconds = seconds }
        if let seconds = try integer("RECEIPTGATE_CLIENT_CACHE_SECONDS", 0...300) { clientCacheSeconds = seconds }
        if let seconds = try integer("RECEIPTGATE_RECONCILE_SUBSCRIPTIONS_INTERVAL", 0...604_800) {
            guard seconds == 0 || seconds >= 5 else {
                throw Invalid(
                    variable: "RECEIPTGATE_RECONCILE_SUBSCRIPTIONS_INTERVAL",
                    problem: "must be 0 (off) or a whole number of seconds from 5, got \"\(seconds)\"")
            }
            quietSubscriptions.intervalSeconds = seconds
        }
        if let count = try integer("RECEIPTGATE_RECONCILE_SUBSCRIPTIONS_BUDGET", 1...10_000) {
            quietSubscriptions.budget = count
        }
        if let seconds = try integer("RECEIPTGATE_REFUND_REVIEW_DELAY", 0...86_400) {
            refundReviewDelaySeconds = seconds
        }
        if let milliseconds = try integer("RECEIPTGATE_READ_MAX_LAG_MS", 0...3_600_000) {
            readMaxLagMilliseconds = milliseconds
        }
        if let seconds = try integer("RECEIPTGATE_ENTITLEMENT_SWEEP_INTERVAL", 1...3600) {
            entitlementSweepSeconds = seconds
        }
        if let days = try integer("RECEIPTGATE_RETAIN_ATTEMPTS_DAYS", 0...36_500) { retainAttemptsDays = days }
        if let days = try integer("RECEIPTGATE_RETAIN_OUTBOX_DAYS", 0...36_500) { retainOutboxDays = days }
        if let days = try integer("RECEIPTGATE_RETAIN_NOTIFICATIONS_DAYS", 0...36_500) {
            retainNotificationsDays = days
        }
        if let seconds = try integer("RECEIPTGATE_RECONCILE_SUBSCRIPTIONS_AFTER", 0...2_592_000) {
            quietSubscriptions.afterSeconds = seconds
        }
    }

    /// The admin token and listener, outbound reach, and the ES256 verifier choice.
    mutating func readOperatorSettings(value: (String) -> String?) throws {
        if let token = value("RECEIPTGATE_ADMIN_TOKEN") {
            guard token.count >= 24 else {
                throw Invalid(
                    variable: "RECEIPTGATE_ADMIN_TOKEN",
                    problem: "must be at least 24 characters (e.g. `openssl rand -hex 24`)")
            }
            adminToken = token
        }
        if let address = value("RECEIPTGATE_ADMIN_ADDR") {
            guard let parsed = ListenAddress(address) else {
                throw Invalid(
                    variable: "RECEIPTGATE_ADMIN_ADDR",
                    problem:
                        "must be HOST:PORT with an IP address (e.g. 127.0.0.1:9090 or [::1]:9090), got \"\(address)\"")
            }
            adminAddress = parsed
        }
        if let allow = value("RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE") {
            guard ["on", "off"].contains(allow) else {
                throw Invalid(
                    variable: "RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE", problem: "must be on or off, got \"\(allow)\"")
            }
            outboundAllowPrivate = allow == "on"
        }
        if let fixedKey = value("RECEIPTGATE_ES256_FIXED_KEY") {
            guard ["on", "off"].contains(fixedKey) else {
                throw Invalid(
                    variable: "RECEIPTGATE_ES256_FIXED_KEY", problem: "must be on or off, got \"\(fixedKey)\"")
            }
            es256FixedKey = fixedKey == "on"
        }
    }
}

/// An IP address and port to listen on: `127.0.0.1:9090`, `[::1]:9090`.
public struct ListenAddress: Sendable, Equatable {
    public let host: String
    public let port: Int

    public init?(_ text: String) {
        let host: Substring, portText: Substring
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            host = text[text.index(after: text.startIndex)..<close]
            guard text[close...].hasPrefix("]:") else { return nil }
            portText = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard let port = Int(portText), (0...65_535).contains(port), !host.isEmpty,
            host.allSatisfy({ $0.isHexDigit || $0 == "." || $0 == ":" })
        else { return nil }
        self.host = String(host)
        self.port = port
    }

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    var shown: String { host.contains(":") ? "[\(host)]" : host }
}

/// Which subscriptions reconciliation reads back from their stores, and how many per run.
public struct QuietSubscriptionSettings: Sendable, Equatable {
    /// Seconds between runs, per store; 0 turns it off.
    public var intervalSeconds = 3600
    /// Store calls per store per run, at most.
    public var budget = 100
    /// How long after a period (or grace) ends with no news before the store is asked (a test
    /// may set it below 0 to ask before the end).
    public var afterSeconds = 3600
    /// A subscription read back waits this long before it is asked again (one still in billing
    /// retry, or one the store had nothing to say about).
    public var spacingSeconds = 86_400

    public init() {}
}
