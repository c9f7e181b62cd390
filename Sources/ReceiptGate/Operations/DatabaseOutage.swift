import Postgres
import ReceiptCore

/// A database that cannot be reached is the service's outage, not the caller's or the store's
/// fault: it is answered 503 with `Retry-After`, in the API's own envelope (its `VERIFIER_ERROR`,
/// "safe to retry"), so load balancers and clients back off and retry instead of reading a 502
/// as a store failure. Every other error keeps its status.
enum DatabaseOutage {
    static let message = "the database is unavailable; safe to retry"
    static let retryAfterSeconds = 1

    /// A broken or refused connection (the server down, restarting or unreachable), a pool shut
    /// down under the request, no connection free in time (every one stuck on a stalled
    /// server), or a server that has become a read-only standby (a failover under way). A
    /// statement the server refused for its content is not an outage.
    static func matches(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.code == .connectionFailed || error.code == .poolClosed || error.code == .poolTimeout
            || error.sqlState?.hasPrefix("08") == true
            || error.sqlState == "57P01" || error.sqlState == "57P03" || error.sqlState == "25006"
    }

    /// A statement that gave up on a lock: waited past its `lock_timeout` (55P03, a catalog change
    /// behind claims in flight) or chosen to break a deadlock (40P01). Its transaction committed
    /// nothing and the same request again normally goes through: answered as an outage is, 503
    /// with `Retry-After`, never as a failure of the service.
    static func isLockConflict(_ error: any Error) -> Bool {
        guard let error = error as? PostgresError else { return false }
        return error.sqlState == "55P03" || error.sqlState == "40P01"
    }

    /// What is answered 503 "safe to retry": an outage or a lock conflict.
    static func answersRetry(_ error: any Error) -> Bool { matches(error) || isLockConflict(error) }

    /// `rendered` (the API's VERIFIER_ERROR body) as a 503 that says when to retry.
    static func response(_ rendered: RouteResponse) -> RouteResponse {
        var response = rendered
        response.status = 503
        response.headers.removeAll { $0.name.lowercased() == "retry-after" }
        response.headers.append(("Retry-After", String(retryAfterSeconds)))
        return response
    }
}
