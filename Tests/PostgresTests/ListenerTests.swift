import Foundation
import Postgres
import TestSupport
import Testing

/// A listener whose server process freezes (SIGSTOP: the socket stays open and nothing arrives,
/// which looks exactly like a quiet channel) notices by its heartbeat, says so, and listens again
/// on a new connection.
@Suite struct ListenerHeartbeat {
    struct Events: Sendable {
        var listening = 0
        var lost = 0
        var payloads: [String] = []
    }

    static let channel = "heartbeat_test"

    /// The backends of this database that last ran the listener's statement, with when they ran it.
    static func listeners(_ pool: PostgresPool) async throws -> [(pid: pid_t, at: Date)] {
        try await pool.query(
            """
            SELECT pid, query_start FROM pg_stat_activity
            WHERE datname = current_database() AND query = \("LISTEN \(channel)") AND pid <> pg_backend_pid()
            """
        ).map { (pid_t(try $0.decode("pid", as: Int.self)), try $0.decode("query_start", as: Date.self)) }
    }

    /// Polls `condition` until it holds; records an issue naming `what` if it has not within `seconds`.
    static func until(_ what: String, within seconds: Int = 60, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("not within \(seconds) s: \(what)")
    }

    @Test func aFrozenServerProcessIsReplacedAndNotificationsFlowAgain() async throws {
        let url = try await TestDatabase.makeDatabase(prefix: "listen")
        let pool = PostgresPool(.init(connectionString: url, size: 1))
        defer { pool.shutdown() }
        let events = LockedBox(Events())
        let listener = PostgresListener(
            connectionString: url, channel: Self.channel, heartbeatInterval: .milliseconds(200),
            heartbeatTimeout: .seconds(3),
            callbacks: .init(
                onListening: { events.update { $0.listening += 1 } },
                onLost: { events.update { $0.lost += 1 } },
                onNotification: { payload in events.update { $0.payloads.append(payload) } }))
        listener.start()
        defer { listener.stop() }
        // A machine busy with the whole suite may take seconds to connect; the heartbeat's timeout
        // is above what such a machine adds to a round trip, so a healthy connection is not lost.
        try await Self.until("listening") { events.get().listening >= 1 }
        let first = try #require(try await Self.listeners(pool).first)

        // A healthy, quiet connection is kept: heartbeats go through on it and nothing is lost.
        try await Self.until("a heartbeat on the same connection") {
            try await Self.listeners(pool).contains { $0.pid == first.pid && $0.at > first.at }
        }
        #expect(events.get().lost == 0 && events.get().listening == 1)

        #expect(kill(first.pid, SIGSTOP) == 0)
        defer { kill(first.pid, SIGCONT) }
        // Bounded by a condition, not a time: on a machine busy with the whole suite a new
        // connection can take seconds; a listener that never noticed would never get here.
        try await Self.until("the frozen connection given up and replaced") {
            let seen = events.get()
            return seen.lost >= 1 && seen.listening >= 2
        }
        #expect(try await Self.listeners(pool).contains { $0.pid != first.pid }, "a new backend listens")
        try await pool.execute("SELECT pg_notify(\(Self.channel), 'after')")
        try await Self.until("the notification delivered on the new connection") {
            events.get().payloads.contains("after")
        }
    }
}
