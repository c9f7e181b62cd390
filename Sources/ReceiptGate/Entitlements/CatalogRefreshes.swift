import Foundation
import Postgres

/// The catalog refreshes owed (`catalog_refreshes`): one per (client, store, product) whose
/// holders must be brought up to date after a catalog change. A change writes its request in the
/// change's own transaction; whoever refreshes (the change's caller at once, or any service's
/// worker later) deletes it only after the refresh committed. So no change is left half done by a
/// deadline, an interrupted command or a crash.
struct CatalogRefreshes: Sendable {
    let pool: PostgresPool

    /// One request, as written or claimed.
    struct Request: Sendable, Equatable {
        let clientID: String
        let store: String
        let productID: String
        /// Moves with every new request for the product: only the refresh of the latest one deletes it.
        let generation: Int64
    }

    /// How long the caller that wrote a request has to refresh it before a worker may take it
    /// over (a command or process that died meanwhile): long enough for a large game's refresh.
    static let callerLease = 60
    /// How long a worker holds a request it claimed.
    static let workerLease = 300

    /// Writes (or renews) the request for `product` inside the caller's transaction, leased to the
    /// caller; the request as written.
    static func request(
        client: String, store: String, product: String, on connection: PostgresConnection
    ) throws -> Request {
        try connection.query(
            """
            INSERT INTO catalog_refreshes (client_id, store, product_id, not_before)
            VALUES (\(client), \(store), \(product), clock_timestamp() + make_interval(secs => \(callerLease)))
            \(unescaped: renewal)
            """
        ).map(decode)[0]
    }

    /// A request for every product some catalog of `clients` maps (their catalogs' holders may have
    /// changed all at once: a client moved to another game, or accepts other environments).
    static func requestAll(clients: [String], on connection: PostgresConnection) throws -> [Request] {
        try connection.query(
            """
            INSERT INTO catalog_refreshes (client_id, store, product_id, not_before)
            SELECT DISTINCT client_id, store, product_id, clock_timestamp() + make_interval(secs => \(callerLease))
            FROM product_entitlements WHERE client_id = ANY(\(clients)::text[])
            \(unescaped: renewal)
            """
        ).map(decode).sorted { ($0.clientID, $0.store, $0.productID) < ($1.clientID, $1.store, $1.productID) }
    }

    /// A request written again is new: a new generation (from the sequence, never one used
    /// before), leased to the caller again, its failures forgotten.
    private static let renewal = """
        ON CONFLICT (client_id, store, product_id) DO UPDATE SET
            generation = nextval('catalog_refresh_generations'), requested_at = clock_timestamp(),
            not_before = EXCLUDED.not_before, attempts = 0, last_error = NULL
        RETURNING client_id, store, product_id, generation
        """

    /// Up to `limit` requests due (never leased, or their lease or retry time passed), leased to
    /// this worker; several processes may ask at once, each gets others' than the rest.
    func claimDue(limit: Int = 20) async throws -> [Request] {
        try await pool.query(
            """
            UPDATE catalog_refreshes r SET not_before = clock_timestamp() + make_interval(secs => \(Self.workerLease)), attempts = r.attempts + 1
            FROM (SELECT client_id, store, product_id FROM catalog_refreshes WHERE not_before <= clock_timestamp()
                  ORDER BY not_before LIMIT \(limit) FOR UPDATE SKIP LOCKED) due
            WHERE r.client_id = due.client_id AND r.store = due.store AND r.product_id = due.product_id
            RETURNING r.client_id, r.store, r.product_id, r.generation
            """
        ).map(Self.decode)
    }

    /// The refresh of `request` committed: done, unless a newer request came meanwhile.
    func complete(_ request: Request) async throws {
        _ = try await pool.execute(
            """
            DELETE FROM catalog_refreshes
            WHERE client_id = \(request.clientID) AND store = \(request.store) AND product_id = \(request.productID) AND generation = \(request.generation)
            """)
    }

    /// The refresh was cut short or failed: due again after `delaySeconds` (at once for 0), for any worker.
    func release(_ request: Request, delaySeconds: Int = 0, error: String? = nil) async throws {
        try await release([request], delaySeconds: delaySeconds, error: error)
    }

    /// Several requests not started (a deadline passed, a shutdown), in one statement: due again
    /// after `delaySeconds`, so another worker takes them at once for 0.
    func release(_ requests: [Request], delaySeconds: Int = 0, error: String? = nil) async throws {
        guard !requests.isEmpty else { return }
        _ = try await pool.execute(
            """
            UPDATE catalog_refreshes r SET not_before = clock_timestamp() + make_interval(secs => \(delaySeconds)),
                last_error = COALESCE(\(error.map { String($0.prefix(500)) }), r.last_error)
            FROM unnest(\(requests.map(\.clientID))::text[], \(requests.map(\.store))::text[], \(requests.map(\.productID))::text[],
                        \(requests.map { String($0.generation) })::bigint[]) AS x(client_id, store, product_id, generation)
            WHERE r.client_id = x.client_id AND r.store = x.store AND r.product_id = x.product_id AND r.generation = x.generation
            """)
    }

    /// Requests not yet done (for tests and the operator: a count that stays above zero means refreshes keep failing).
    func pending() async throws -> [Request] {
        try await pool.query("SELECT client_id, store, product_id, generation FROM catalog_refreshes ORDER BY 1, 2, 3")
            .map(Self.decode)
    }

    private static func decode(_ row: PostgresRow) throws -> Request {
        Request(
            clientID: try row.decode("client_id"), store: try row.decode("store"),
            productID: try row.decode("product_id"),
            generation: try row.decode("generation"))
    }
}
