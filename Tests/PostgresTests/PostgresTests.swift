import Foundation
import Postgres
import TestSupport
import Testing

@Suite struct QueriesAndParameters {
    @Test func aFragmentKeepsItsParametersInPlace() async throws {
        let condition: PostgresQuery = "(a = \(10) OR b = \("ten"))"
        let query: PostgresQuery = "SELECT \(1)::int AS one WHERE \(condition) AND c = \(Int64(12))"
        #expect(query.sql == "SELECT $1::int AS one WHERE (a = $2 OR b = $3) AND c = $4")
        #expect(query.bindings == ["1", "10", "ten", "12"])
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        let rows = try await pool.query(
            """
            SELECT count(*)::int AS n FROM (VALUES (10, 'x', 12), (1, 'ten', 12), (1, 'x', 12)) AS t(a, b, c)
            WHERE \(PostgresQuery("(a = \(10) OR b = \("ten"))")) AND c = \(12)
            """)
        #expect(try rows[0].decode("n", as: Int.self) == 2)
    }

    @Test func boundParametersRoundTripNullUnicodeAndHostileText() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 2))
        defer { pool.shutdown() }
        try await pool.execute(
            "CREATE TABLE notes (id serial PRIMARY KEY, body text, amount bigint, paid boolean, raw bytea, at timestamptz)"
        )

        let hostile = "Robert'); DROP TABLE notes;-- 🎮 héllo 漢字"
        let raw = Data([0, 1, 2, 255])
        let at = Date(timeIntervalSince1970: 1_764_000_000.123456)
        let missing: String? = nil
        try await pool.execute(
            "INSERT INTO notes (body, amount, paid, raw, at) VALUES (\(hostile), \(Int64(9_007_199_254_740_993)), \(true), \(raw), \(at))"
        )
        try await pool.execute("INSERT INTO notes (body, amount) VALUES (\(missing), \(-5))")

        let rows = try await pool.query("SELECT body, amount, paid, raw, at FROM notes ORDER BY id")
        #expect(rows.count == 2)
        #expect(try rows[0].decode("body", as: String.self) == hostile)
        #expect(try rows[0].decode("amount", as: Int64.self) == 9_007_199_254_740_993)
        #expect(try rows[0].decode("paid", as: Bool.self))
        #expect(try rows[0].decode("raw", as: Data.self) == raw)
        let readBack = try rows[0].decode("at", as: Date.self)
        #expect(abs(readBack.timeIntervalSince1970 - at.timeIntervalSince1970) < 0.000_002)
        #expect(try rows[1].decode("body", as: String?.self) == nil)
        #expect(rows[1].isNull("paid"))
        #expect(try rows[1].decode("amount", as: Int.self) == -5)
        // The hostile text was data, never SQL: the table is still there.
        #expect(try await pool.query("SELECT count(*) AS n FROM notes")[0].decode("n", as: Int.self) == 2)
    }

    /// A text[] parameter (how a batch of webhook bodies is written in one statement) reaches the
    /// server element for element, whatever the elements hold.
    @Test func aTextArrayRoundTripsQuotesBackslashesAndUnicode() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        let elements = [
            #"{"event":"transaction.verified","note":"say \"hi\" \\ bye"}"#, "", "NULL", "a,b", "{}", "\\", "\"",
            "🎮 héllo 漢字", "line\nbreak\ttab",
        ]
        let rows = try await pool.query(
            "SELECT element, ordinality::int AS n FROM unnest(\(elements)::text[]) WITH ORDINALITY AS t(element) ORDER BY n"
        )
        #expect(try rows.map { try $0.decode("element", as: String.self) } == elements)
        #expect(
            try await pool.query("SELECT cardinality(\([String]())::text[]) AS n")[0].decode("n", as: Int.self) == 0)
    }

    /// A value with a NUL inside is refused, never bound cut short at the NUL (a name with its tail
    /// lost): anywhere in a plain parameter or in one element of an array, and nothing is written.
    @Test func aValueWithANULIsRefusedNotCutShort() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        try await pool.execute("CREATE TABLE names (name text)")
        for value in ["player\u{0}admin", "\u{0}", "tail\u{0}"] {
            await #expect(throws: PostgresError.self) {
                try await pool.execute("INSERT INTO names VALUES (\(value))")
            }
            await #expect(throws: PostgresError.self) {
                try await pool.execute("INSERT INTO names SELECT unnest(\(["fine", value])::text[])")
            }
        }
        try await pool.execute("INSERT INTO names VALUES (\("player"))")
        #expect(
            try await pool.query("SELECT name FROM names").map { try $0.decode("name", as: String.self) } == ["player"])
    }

    /// Two pools of one connection each over one database holding `items` (1, 'one'): one session
    /// prepares, the other migrates.
    static func twoSessionsOverItems() async throws -> (PostgresPool, PostgresPool) {
        let url = try await TestDatabase.makeDatabase()
        let pool = PostgresPool(.init(connectionString: url, size: 1))
        let other = PostgresPool(.init(connectionString: url, size: 1))
        try await pool.execute("CREATE TABLE items (id int PRIMARY KEY, name text)")
        try await pool.execute("INSERT INTO items VALUES (1, 'one')")
        return (pool, other)
    }

    /// A prepared statement keeps answering when another process migrates the table it returns
    /// (Postgres refuses the old plan: "cached plan must not change result type").
    @Test func aPreparedStatementFollowsATableChangedByAnotherSession() async throws {
        let (pool, other) = try await Self.twoSessionsOverItems()
        defer { pool.shutdown(); other.shutdown() }
        let select: PostgresQuery = "SELECT * FROM items WHERE id = \(1)"
        let before = try await pool.withConnection { try $0.query(select, preparedAs: "items_by_id") }
        #expect(try before.first?.decode("name", as: String.self) == "one")
        #expect(throws: PostgresError(.decodingFailed, "")) { try before.first?.decode("added", as: String?.self) }
        try await other.execute("ALTER TABLE items ADD COLUMN added text NOT NULL DEFAULT 'new'")
        let after = try await pool.withConnection { try $0.query(select, preparedAs: "items_by_id") }
        #expect(try after.first?.decode("added", as: String.self) == "new")
        #expect(try after.first?.decode("name", as: String.self) == "one")
        // One name, one text: reusing the name for another statement is refused, not run.
        await #expect(throws: PostgresError(.queryFailed, "")) {
            try await pool.withConnection { try $0.query("SELECT 2 AS n", preparedAs: "items_by_id") }
        }
    }

    /// Inside a transaction the refused plan fails that transaction, and the statement is prepared
    /// again at its next use, in the next transaction.
    @Test func aPreparedStatementRefusedInATransactionIsPreparedAgainForTheNext() async throws {
        let (pool, other) = try await Self.twoSessionsOverItems()
        defer { pool.shutdown(); other.shutdown() }
        let select: PostgresQuery = "SELECT * FROM items WHERE id = \(1)"
        _ = try await pool.withTransaction { try $0.query(select, preparedAs: "items_in_transaction") }
        try await other.execute("ALTER TABLE items ADD COLUMN added text NOT NULL DEFAULT 'new'")
        await #expect(throws: PostgresError.self) {
            try await pool.withTransaction { try $0.query(select, preparedAs: "items_in_transaction") }
        }
        let after = try await pool.withTransaction { try $0.query(select, preparedAs: "items_in_transaction") }
        #expect(try after.first?.decode("added", as: String.self) == "new")
    }

    /// Dates travel as ISO 8601 text written by hand; the C library's formatting is the reference.
    @Test(arguments: [
        -62_135_596_800.0, -1.5, 0, 0.000_001, 951_782_400.25, 1_764_000_000.123456, 4_102_444_799.999_999,
        253_402_300_800,
    ])
    func datesAreWrittenAsISO8601WithMicroseconds(epoch: Double) throws {
        let text = try #require(Date(timeIntervalSince1970: epoch).postgresText)
        let micros = Int64((epoch * 1_000_000).rounded())
        var seconds = micros / 1_000_000, fraction = micros % 1_000_000
        if fraction < 0 { fraction += 1_000_000; seconds -= 1 }
        var time = time_t(seconds), parts = tm()
        gmtime_r(&time, &parts)
        let expected = String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%06lldZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), fraction)
        #expect(text == expected)
    }

    @Test func typedDecodingFailuresNameTheColumn() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        let row = try #require(
            try await pool.query("SELECT 'abc'::text AS word, NULL::int AS nothing, ARRAY['a','b,c','d\"e'] AS list")
                .first)
        #expect(throws: PostgresError(.decodingFailed, "")) { try row.decode("word", as: Int.self) }
        #expect(throws: PostgresError(.decodingFailed, "")) { try row.decode("nothing", as: Int.self) }
        #expect(throws: PostgresError(.decodingFailed, "")) { try row.decode("absent", as: String.self) }
        #expect(try row.decode("nothing", as: Int?.self) == nil)
        #expect(try row.decode("list", as: [String].self) == ["a", "b,c", "d\"e"])
    }

    @Test func serverErrorsCarrySQLState() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        try await pool.execute("CREATE TABLE unique_things (name text UNIQUE)")
        try await pool.execute("INSERT INTO unique_things VALUES (\("a"))")
        do {
            try await pool.execute("INSERT INTO unique_things VALUES (\("a"))")
            Issue.record("a duplicate insert succeeded")
        } catch let error as PostgresError {
            #expect(error.isUniqueViolation)
            #expect(error.code == .queryFailed)
        }
        await #expect(throws: PostgresError(.queryFailed, "", sqlState: "42601")) { try await pool.execute("SELEKT 1") }
        // The connection that saw errors is still usable.
        #expect(try await pool.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
    }
}

@Suite struct Transactions {
    @Test func aThrowingTransactionLeavesNoTrace() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 2))
        defer { pool.shutdown() }
        try await pool.execute("CREATE TABLE ledger (id int PRIMARY KEY)")
        struct Abort: Error {}
        await #expect(throws: Abort.self) {
            try await pool.withTransaction { connection in
                try connection.execute("INSERT INTO ledger VALUES (\(1))")
                try connection.execute("INSERT INTO ledger VALUES (\(2))")
                throw Abort()
            }
        }
        #expect(try await pool.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 0)

        _ = try await pool.withTransaction { connection in
            try connection.execute("INSERT INTO ledger VALUES (\(3))")
        }
        #expect(try await pool.query("SELECT id FROM ledger").map { try $0.decode("id", as: Int.self) } == [3])
    }

    @Test func aFailedStatementRollsBackTheWholeTransaction() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        try await pool.execute("CREATE TABLE ledger (id int PRIMARY KEY)")
        await #expect(throws: PostgresError.self) {
            try await pool.withTransaction { connection in
                try connection.execute("INSERT INTO ledger VALUES (\(1))")
                try connection.execute("INSERT INTO ledger VALUES (\(1))")
            }
        }
        #expect(try await pool.query("SELECT count(*) AS n FROM ledger")[0].decode("n", as: Int.self) == 0)
    }

    @Test func poolStatisticsCountLeasedConnections() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 3))
        defer { pool.shutdown() }
        #expect(pool.statistics == .init(size: 3, inUse: 0))
        let seen = try await pool.withConnection { _ in pool.statistics }
        #expect(seen.inUse == 1)
        #expect(seen.idle == 2)
    }

    @Test func manyConcurrentCallersShareAFewConnections() async throws {
        let poolSize = 4
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: poolSize))
        defer { pool.shutdown() }
        // Each query sleeps a little so callers overlap, and reports what the server sees while it
        // runs: how many backends this database has, and how many of them are busy right now.
        // The database is the test's own, so every client backend counted is one of the pool's (an
        // autovacuum worker visiting it is a backend too, and not counted).
        let samples = try await withThrowingTaskGroup(of: (n: Int, backends: Int, active: Int).self) { group in
            for index in 0..<120 {
                group.addTask {
                    let row = try #require(
                        try await pool.query(
                            """
                            SELECT \(index)::int AS n,
                                   (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                                      AND backend_type = 'client backend')::int AS backends,
                                   (SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
                                      AND backend_type = 'client backend' AND state = 'active')::int AS active
                            FROM pg_sleep(0.02)
                            """
                        ).first)
                    return (
                        try row.decode("n", as: Int.self), try row.decode("backends", as: Int.self),
                        try row.decode("active", as: Int.self)
                    )
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(samples.map(\.n).sorted() == Array(0..<120), "every caller got its own answer")
        let mostBackends = samples.map(\.backends).max() ?? 0
        let mostActive = samples.map(\.active).max() ?? 0
        #expect(mostBackends <= poolSize, "the server saw \(mostBackends) connections from a pool of \(poolSize)")
        #expect(
            mostActive >= 2,
            "queries never overlapped (at most \(mostActive) active at once), so the bound proves nothing")
    }
}

@Suite struct Migrations {
    static let migrations = [
        // Deliberately not idempotent, and slow: two migrators running it at once would fail.
        Migration(version: 1, name: "slow_table", sql: "SELECT pg_sleep(0.5); CREATE TABLE slow (id int PRIMARY KEY);"),
        Migration(version: 2, name: "second", sql: "ALTER TABLE slow ADD COLUMN note text;"),
    ]

    @Test func twoConcurrentMigratorsApplyEachVersionOnce() async throws {
        let database = try await TestDatabase.makeDatabase()
        let first = PostgresPool(.init(connectionString: database, size: 1))
        let second = PostgresPool(.init(connectionString: database, size: 1))
        defer { first.shutdown(); second.shutdown() }

        async let a = Migrator.migrate(first, migrations: Self.migrations)
        async let b = Migrator.migrate(second, migrations: Self.migrations)
        let applied = try await [a, b]
        #expect(applied.flatMap { $0 }.sorted() == [1, 2])
        let rows = try await first.query("SELECT version FROM schema_migrations ORDER BY version")
        #expect(try rows.map { try $0.decode("version", as: Int.self) } == [1, 2])

        // A later start finds nothing to do, and a new migration is applied alone.
        #expect(try await Migrator.migrate(first, migrations: Self.migrations).isEmpty)
        let third = Migration(version: 3, name: "third", sql: "CREATE INDEX slow_note ON slow (note);")
        #expect(try await Migrator.migrate(first, migrations: Self.migrations + [third]) == [3])
    }

    @Test func aFailingMigrationIsNotRecorded() async throws {
        let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(), size: 1))
        defer { pool.shutdown() }
        let broken = [
            Migration(version: 1, name: "ok", sql: "CREATE TABLE a (id int);"),
            Migration(version: 2, name: "broken", sql: "CREATE TABLE b (id int); CREATE TABLE a (id int);"),
        ]
        await #expect(throws: PostgresError.self) { try await Migrator.migrate(pool, migrations: broken) }
        let versions = try await pool.query("SELECT version FROM schema_migrations").map {
            try $0.decode("version", as: Int.self)
        }
        #expect(versions == [1])
        // Migration 2 rolled back as a whole: table b does not exist.
        #expect(try await pool.query("SELECT to_regclass('b') IS NULL AS gone")[0].decode("gone", as: Bool.self))
    }
}

@Suite(.serialized) struct ClusterLifecycle {
    @Test func poolRecoversAfterTheServerRestarts() async throws {
        let cluster = try await TestDatabase.makePrivateCluster()
        let pool = PostgresPool(.init(connectionString: try cluster.connectionString, size: 2))
        defer { pool.shutdown() }
        try await pool.execute("CREATE TABLE survives (id int)")
        try await pool.execute("INSERT INTO survives VALUES (\(7))")

        try await onOwnThread { try cluster.restart() }

        // No manual reconnect: the next calls just work.
        for _ in 0..<4 {
            #expect(try await pool.query("SELECT id FROM survives")[0].decode("id", as: Int.self) == 7)
        }
    }

    @Test func connectingToAStoppedServerIsARetryableError() async throws {
        let cluster = try await TestDatabase.makePrivateCluster()
        let pool = PostgresPool(.init(connectionString: try cluster.connectionString, size: 1))
        defer { pool.shutdown() }
        try await onOwnThread { try cluster.stop() }
        do {
            try await pool.execute("SELECT 1")
            Issue.record("query succeeded with the server stopped")
        } catch let error as PostgresError {
            #expect(error.code == .connectionFailed)
            #expect(error.isRetryable)
        }
        _ = try await onOwnThread { try cluster.start() }
        #expect(try await pool.query("SELECT 1 AS one")[0].decode("one", as: Int.self) == 1)
    }

    @Test func embeddedClusterKeepsItsDataAcrossStopAndStart() async throws {
        let directory = TestDatabase.temporaryDirectory("embedded").appendingPathComponent("postgres")
        let cluster = EmbeddedCluster(directory: directory)
        #expect(try await onOwnThread { try cluster.start() })
        #expect(try await onOwnThread { try cluster.isRunning })
        let pool = PostgresPool(.init(connectionString: try cluster.connectionString, size: 1))
        try await pool.execute("CREATE TABLE kept (word text)")
        try await pool.execute("INSERT INTO kept VALUES (\("persisted"))")
        pool.shutdown()

        try await onOwnThread { try cluster.stop() }
        #expect(try await onOwnThread { try !cluster.isRunning })
        #expect(try await onOwnThread { try cluster.start() })
        #expect(try await onOwnThread { try !cluster.start() }, "a second start of a running cluster starts nothing")
        let again = PostgresPool(.init(connectionString: try cluster.connectionString, size: 1))
        defer { again.shutdown() }
        #expect(try await again.query("SELECT word FROM kept")[0].decode("word", as: String.self) == "persisted")

        // No TCP listener: the server was told to listen on no address at all.
        #expect(try await again.query("SHOW listen_addresses")[0].decode("listen_addresses", as: String.self) == "")
        try await onOwnThread { try cluster.stop() }
        try? FileManager.default.removeItem(at: directory.deletingLastPathComponent())
    }
}
