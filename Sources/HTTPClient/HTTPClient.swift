public import Foundation
import Workers

/// Outbound HTTP(S) on libcurl. The client's transfers run on a thread of its own (never Swift's
/// cooperative pool), all of them through one libcurl multi handle (`TransferLoop`); callers
/// await the result. TLS peer and host
/// verification are always on. Retries with exponential back-off and jitter on 5xx, 429 and
/// transport failures, honouring `Retry-After`.
public final class HTTPClient: Sendable {
    public struct RetryPolicy: Sendable {
        /// Total attempts, including the first.
        public var maxAttempts: Int = 3
        public var baseDelay: Duration = .milliseconds(200)
        public var maxDelay: Duration = .seconds(5)
        /// A `Retry-After` longer than this is not waited for: the last response is returned.
        public var maxRetryAfter: Duration = .seconds(30)
        /// Statuses retried besides 429 and 5xx (a store's own "try again": Amazon RVS's 410).
        package var alsoRetried: Set<Int> = []
        /// Under a deadline, a retry is made only if at least this much is left for it after its
        /// wait: an attempt that could not finish is not worth starting.
        package var minimumTimeForRetry: Duration = .seconds(2)

        package init(
            maxAttempts: Int = 3, baseDelay: Duration = .milliseconds(200), maxDelay: Duration = .seconds(5),
            maxRetryAfter: Duration = .seconds(30), alsoRetried: Set<Int> = []
        ) {
            self.maxAttempts = maxAttempts
            self.baseDelay = baseDelay
            self.maxDelay = maxDelay
            self.maxRetryAfter = maxRetryAfter
            self.alsoRetried = alsoRetried
        }

        func retries(_ status: Int) -> Bool { status == 429 || status >= 500 || alsoRetried.contains(status) }

        public static let none = RetryPolicy(maxAttempts: 1)
    }

    public struct Configuration: Sendable {
        /// Relative request URLs resolve against this (e.g. `https://api.storekit.itunes.apple.com`).
        public var baseURL: String?
        public var timeout: Duration = .seconds(15)
        package var connectTimeout: Duration = .seconds(5)
        package var maxResponseBytes: Int = 8 << 20
        /// PEM bundle of trusted CAs; nil uses the system's (Debian's ca-certificates).
        package var caBundlePath: String?
        public var retry = RetryPolicy()
        /// Transfers under way at once; more wait for their turn, within their timeout.
        package var concurrentTransfers: Int = 16
        /// The longest the transfer loop waits for its sockets between turns when nothing wakes it
        /// (libcurl shortens it to its own next timeout); a new request wakes it at once.
        package var idleWait: Duration = .seconds(1)
        /// The clock a `Retry-After` date is read against.
        package var now: @Sendable () -> Date = { Date() }
        /// How the wait before a retry is spent; a test records the waits asked for instead.
        package var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }

        public init(baseURL: String? = nil) { self.baseURL = baseURL }
    }

    public struct Request: Sendable {
        public var method: String
        /// Absolute, or relative to the configuration's `baseURL`.
        public var url: String
        public var headers: [(name: String, value: String)]
        public var body: Data?
        /// Overrides the configuration's timeout for this request.
        public var timeout: Duration?
        /// Set false for requests that must not be repeated (non-idempotent without a key).
        public var retryable: Bool = true
        /// Overrides the configuration's retry policy for this request.
        package var retry: RetryPolicy?
        /// When the caller needs its answer by: every attempt's timeout ends by then, and no retry
        /// starts that could not finish before it. Unset, the task's `OutboundDeadline` applies.
        public var deadline: ContinuousClock.Instant?
        /// Which addresses the host may resolve to.
        package var destinations: DestinationPolicy = .any

        public init(
            method: String = "GET", url: String, headers: [(name: String, value: String)] = [], body: Data? = nil
        ) {
            self.method = method
            self.url = url
            self.headers = headers
            self.body = body
        }
    }

    public struct Response: Sendable {
        public let status: Int
        public let headers: [(name: String, value: String)]
        public let body: Data
        /// How many attempts it took (1 if no retry happened).
        public let attempts: Int

        public func header(_ name: String) -> String? {
            let lowered = name.lowercased()
            return headers.last { $0.name.lowercased() == lowered }?.value
        }
    }

    public let configuration: Configuration
    private let transfers: TransferLoop
    /// Where a checked destination's name is resolved (getaddrinfo blocks): not the loop's thread.
    private let resolvers: BlockingWorkers<Void>
    private let resolvedNames = ResolvedNames()

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        transfers = TransferLoop(
            limit: configuration.concurrentTransfers, name: "http-client", idleWait: configuration.idleWait)
        resolvers = BlockingWorkers(name: "http-resolve", threads: 4)
    }

    deinit {
        transfers.close()
        resolvers.close()
    }

    /// Sends the request, retrying as the policy allows. After the last attempt, a retried
    /// status (5xx, 429) is returned as is; a transport failure is thrown. Under a deadline (the
    /// request's, or the task's `OutboundDeadline`), each attempt's timeout ends by it and a retry
    /// is made only with `minimumTimeForRetry` left after its wait; none is started past it.
    public func send(_ request: Request) async throws -> Response {
        let url = try resolve(request.url)
        let policy = request.retryable ? request.retry ?? configuration.retry : .none
        let deadline = request.deadline ?? OutboundDeadline.current
        var attempt = 0
        while true {
            attempt += 1
            var timeout = request.timeout ?? configuration.timeout
            if let deadline {
                let left = deadline - ContinuousClock.now
                guard left > .milliseconds(1) else {
                    throw HTTPClientError(.timeout, "the caller's deadline passed before attempt \(attempt)")
                }
                timeout = min(timeout, left)
            }
            let outcome: Result<Transfer.Outcome, HTTPClientError>
            do {
                outcome = .success(try await perform(request, url: url, timeout: timeout))
            } catch let error as HTTPClientError {
                outcome = .failure(error)
            }
            let delay: Duration?
            switch outcome {
            case .success(let transfer):
                let response = Response(
                    status: transfer.status, headers: transfer.headers, body: transfer.body, attempts: attempt)
                guard attempt < policy.maxAttempts, policy.retries(response.status) else { return response }
                delay = Self.delay(for: response, attempt: attempt, policy: policy, now: configuration.now())
                guard let delay, Self.leavesTimeForRetry(after: delay, before: deadline, policy: policy) else {
                    return response
                }
            case .failure(let error):
                guard attempt < policy.maxAttempts, error.isRetryable else { throw error }
                delay = Self.backoff(attempt: attempt, policy: policy)
                guard let delay, Self.leavesTimeForRetry(after: delay, before: deadline, policy: policy) else {
                    throw error
                }
            }
            if let delay { try await configuration.sleep(delay) }
        }
    }

    static func leavesTimeForRetry(
        after delay: Duration, before deadline: ContinuousClock.Instant?, policy: RetryPolicy
    ) -> Bool {
        guard let deadline else { return true }
        return deadline - (ContinuousClock.now + delay) >= policy.minimumTimeForRetry
    }

    private func perform(_ request: Request, url: String, timeout: Duration) async throws -> Transfer.Outcome {
        let queued = ContinuousClock.now
        let pin = try await pin(url, request.destinations)
        let transfer = Transfer(
            method: request.method.uppercased(), url: url, headers: request.headers, body: request.body,
            connectTimeout: configuration.connectTimeout, maxResponseBytes: configuration.maxResponseBytes,
            caBundlePath: configuration.caBundlePath, destinations: request.destinations, pin: pin)
        let start = StartOrGiveUp()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                // The timeout covers the wait for a transfer slot too: a request queued behind slow
                // ones must not outlive its caller's deadline. Whichever comes first, the loop
                // starting it, the timeout running out or the caller being cancelled, decides;
                // the others do nothing.
                let late = HTTPClientError(.timeout, "no transfer slot was free within the request's timeout")
                start.onGiveUp(after: timeout - (ContinuousClock.now - queued)) { reason in
                    continuation.resume(throwing: reason == .cancelled ? CancellationError() : late)
                }
                let accepted = transfers.submit(
                    TransferLoop.Job(
                        transfer: transfer, decision: start, queued: queued, timeout: timeout,
                        finished: { continuation.resume(with: $0.mapError { $0 as any Error }) }))
                if !accepted, start.start() {
                    continuation.resume(throwing: HTTPClientError(.clientClosed, "the HTTP client is shut down"))
                }
            }
        } onCancel: {
            start.cancel()
        }
    }

    /// The checked addresses the transfer is pinned to (`Destination.pin`): remembered for a
    /// while, and a name asked of DNS on a resolver thread, never on the loop's.
    private func pin(_ url: String, _ policy: DestinationPolicy) async throws -> String? {
        guard policy.checksHere else { return nil }
        // Looked up before the URL is parsed: a webhook's destination is checked once a while,
        // not parsed twice a message.
        if let remembered = resolvedNames.pin(for: url, policy: policy) { return remembered }
        let pin: String?
        if Destination.resolvesHost(url: url, policy: policy) {
            pin = try await resolvers.perform(
                late: HTTPClientError(.timeout, "the name was not resolved in time"),
                closed: HTTPClientError(.clientClosed, "the HTTP client is shut down")
            ) { _ in try Destination.pin(url: url, policy: policy) }
        } else {
            pin = try Destination.pin(url: url, policy: policy)
        }
        resolvedNames.remember(pin, for: url, policy: policy)
        return pin
    }

    private func resolve(_ url: String) throws -> String {
        let lowered = url.lowercased()
        if lowered.hasPrefix("https://") || lowered.hasPrefix("http://") { return url }
        guard let base = configuration.baseURL else {
            throw HTTPClientError(.invalidURL, "relative URL \(url) with no base URL configured")
        }
        return base.hasSuffix("/") || url.hasPrefix("/") ? base + url : base + "/" + url
    }

    /// Exponential back-off with "equal jitter": half the step fixed, half random.
    static func backoff(attempt: Int, policy: RetryPolicy) -> Duration {
        let exponential = policy.baseDelay * Int(1 << min(attempt - 1, 20))
        let capped = min(exponential, policy.maxDelay)
        return capped / 2 + capped / 2 * Double.random(in: 0...1)
    }

    /// The wait before retrying this response: its `Retry-After` if present and acceptable,
    /// else back-off. nil means do not retry (the server asked for longer than we wait).
    static func delay(for response: Response, attempt: Int, policy: RetryPolicy, now: Date) -> Duration? {
        guard let header = response.header("Retry-After") else { return backoff(attempt: attempt, policy: policy) }
        guard let wait = parseRetryAfter(header, now: now) else { return backoff(attempt: attempt, policy: policy) }
        return wait <= policy.maxRetryAfter ? wait : nil
    }

    /// `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
    public static func parseRetryAfter(_ value: String, now: Date) -> Duration? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return .milliseconds(max(0, Int(date.timeIntervalSince(now) * 1000)))
    }
}

/// The deadline of the work the current task does for its caller (a verification's store calls,
/// set once by the core around them): every `HTTPClient.send` made within it is bounded by it,
/// whichever store client makes it.
public enum OutboundDeadline {
    @TaskLocal public static var current: ContinuousClock.Instant?
}
