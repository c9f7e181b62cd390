package import HTTPServer
package import ReceiptCore

/// One access-log line per request (method, route, status, duration, request id) and the
/// request metrics. Runs outermost, so it sees every request, 404s included.
package struct ObservabilityMiddleware: HTTPMiddleware {
    let logger: Logger
    let metrics: Metrics

    package init(logger: Logger, metrics: Metrics) {
        self.logger = logger
        self.metrics = metrics
    }

    package func handle(_ request: HTTPRequest, next: HTTPHandler) async throws -> HTTPResponse {
        let started = ContinuousClock.now
        let response = try await next(request)
        let elapsed = ContinuousClock.now - started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.record(
            method: request.normalizedMethod, route: request.route, status: response.status, seconds: seconds)
        var fields = [
            ("request.id", request.requestID), ("http.method", request.normalizedMethod), ("http.route", request.route),
            ("http.status", String(response.status)), ("duration_ms", Self.milliseconds(seconds)),
        ]
        if let remote = request.remoteAddress { fields.append(("client.address", remote)) }
        logger.log(response.status >= 500 ? .error : .info, "request", pairs: fields)
        return response
    }

    /// `12.345`: what `String(format: "%.3f")` writes, without its cost on every request.
    static func milliseconds(_ seconds: Double) -> String {
        let micros = Int((max(seconds, 0) * 1_000_000).rounded())
        let fraction = String(micros % 1000)
        return "\(micros / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
