import AppStoreTestSupport
import Foundation
import Postgres
import TestSupport
import Testing

/// What the client cache may not do when its notifications stop coming: keep a rotated secret or
/// a disabled client working past its lifetime (`RECEIPTGATE_CLIENT_CACHE_SECONDS`), or go on
/// trusting a listener whose Postgres backend has frozen. Reads are the requests to watch: unlike
/// verifications, they check no version in the database.
@Suite(.serialized) struct ClientCacheExpiry {
    typealias Across = ClientCacheAcrossProcesses
    static let path = "/v1/transactions/app_store/2000000000100020"
    /// Request and scheduling time on a loaded machine, on top of the lifetime.
    static let margin = Duration.seconds(2)

    /// A service with `lifetime` (nil: the default), a client and one purchase it may read.
    static func start(_ name: String, lifetime: Int?) async throws -> (Across.Fixture, ChildProcess, SignedClient) {
        let fixture = try await Across.fixture(name)
        var environment = fixture.environment
        if let lifetime { environment["RECEIPTGATE_CLIENT_CACHE_SECONDS"] = String(lifetime) }
        let (server, port) = try await Across.serve(environment)
        let client = SignedClient(port: port, clientID: fixture.clientID, secret: fixture.secret)
        #expect(try await client.post("/v1/verify", json: Across.receipt(fixture.pki, 20)).status == 200)
        #expect(try await client.get(path).status == 200)  // cached now
        return (fixture, server, client)
    }

    /// The backend of the service's `LISTEN` connection (the heartbeat re-runs the same statement).
    static func listenerBackends(_ pool: PostgresPool) async throws -> [pid_t] {
        try await pool.query(
            """
            SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = 'LISTEN receiptgate_clients'
            """
        ).map { pid_t(try $0.decode("pid", as: Int.self)) }
    }

    /// Polls the read until it answers `expected` or `deadline` passes; the last status seen.
    static func status(
        of client: SignedClient, becomes expected: Int, by deadline: ContinuousClock.Instant
    ) async throws -> Int {
        var status = try await client.get(path).status
        while status != expected && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            status = try await client.get(path).status
        }
        return status
    }

    static func rotate(_ fixture: Across.Fixture) async throws -> String {
        let rotated = try Binary.json(
            try await Binary.run(["client", "rotate-secret", fixture.clientID], fixture.environment).stdout)
        return try #require(rotated["client_secret"] as? String)
    }

    /// Rotates the secret with the CLI and expects the old one refused within `bound`; the client
    /// with the new secret.
    static func rotateAndExpectTheOldSecretRefused(
        _ fixture: Across.Fixture, old: SignedClient, within bound: Duration
    ) async throws -> SignedClient {
        let rotating = ContinuousClock.now
        let fresh = SignedClient(port: old.port, clientID: fixture.clientID, secret: try await rotate(fixture))
        let refused = try await status(of: old, becomes: 401, by: rotating + bound)
        #expect(refused == 401, "the old secret still read \(ContinuousClock.now - rotating) after the rotation")
        return fresh
    }

    /// The listener's backend frozen, then the secret rotated and the client disabled with the CLI:
    /// each is refused within the default lifetime.
    @Test func aFrozenListenerKeepsNeitherAnOldSecretNorADisabledClientPastTheLifetime() async throws {
        let (fixture, server, old) = try await Self.start("cache-frozen", lifetime: nil)
        defer { fixture.pool.shutdown(); server.send(SIGTERM) }
        let frozen = try #require(try await Self.listenerBackends(fixture.pool).first)
        #expect(kill(frozen, SIGSTOP) == 0)
        defer { kill(frozen, SIGCONT) }

        let fresh = try await Self.rotateAndExpectTheOldSecretRefused(
            fixture, old: old, within: .seconds(5) + Self.margin)
        #expect(try await fresh.get(Self.path).status == 200)

        let disabling = ContinuousClock.now
        _ = try await Binary.run(["client", "disable", fixture.clientID], fixture.environment)
        let disabled = try await Self.status(of: fresh, becomes: 401, by: disabling + .seconds(5) + Self.margin)
        #expect(
            disabled == 401, "the disabled client still read \(ContinuousClock.now - disabling) after it was disabled")
    }

    /// With no notification at all (the trigger switched off) and a healthy listener, the lifetime
    /// alone bounds how long a rotated secret is accepted.
    @Test func theLifetimeAloneBoundsAMissedNotification() async throws {
        let (fixture, server, old) = try await Self.start("cache-lifetime", lifetime: 2)
        defer { fixture.pool.shutdown(); server.send(SIGTERM) }
        // this test's own database
        try await fixture.pool.execute("ALTER TABLE clients DISABLE TRIGGER clients_changed")
        let rotating = ContinuousClock.now
        _ = try await Self.rotate(fixture)
        let refused = try await Self.status(of: old, becomes: 401, by: rotating + .seconds(2) + Self.margin)
        #expect(refused == 401, "the old secret still read \(ContinuousClock.now - rotating) after the rotation")
    }

    /// With a lifetime far longer than the test, only the heartbeat can end the trust in a frozen
    /// listener: the cache is dropped (the notification went to the frozen backend), a new backend
    /// listens, and a change made after that is refused at once as well.
    @Test func aFrozenListenerIsReplacedAndWhatItMissedIsNotServed() async throws {
        let (fixture, server, old) = try await Self.start("cache-heartbeat", lifetime: 300)
        defer { fixture.pool.shutdown(); server.send(SIGTERM) }
        let frozen = try #require(try await Self.listenerBackends(fixture.pool).first)
        #expect(kill(frozen, SIGSTOP) == 0)
        defer { kill(frozen, SIGCONT) }

        let fresh = try await Self.rotateAndExpectTheOldSecretRefused(fixture, old: old, within: .seconds(20))
        let replacing = ContinuousClock.now
        while try await !Self.listenerBackends(fixture.pool).contains(where: { $0 != frozen })
            && ContinuousClock.now < replacing + .seconds(20)
        {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(try await Self.listenerBackends(fixture.pool).contains { $0 != frozen }, "no new backend listens")

        #expect(try await fresh.get(Self.path).status == 200)
        _ = try await Binary.run(["client", "disable", fixture.clientID], fixture.environment)
        let disabling = ContinuousClock.now
        #expect(
            try await Self.status(of: fresh, becomes: 401, by: disabling + .seconds(3)) == 401,
            "the notification did not arrive")
    }
}
