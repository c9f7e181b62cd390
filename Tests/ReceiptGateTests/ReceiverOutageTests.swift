import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A receiver's circuit against the database going away: what cannot be read or written while it
/// is away neither opens a receiver that answers nor leaves a closed one's messages parked.
@Suite struct ReceiverOutage {
    /// A worker of its own (not started) on a fresh database, whose client directory always
    /// fails as while the database fails over, and four webhooks due for its client.
    struct Bare {
        let pool: PostgresPool
        let worker: OutboxWorker
        let receiver: ReceiverCircuits.Receiver
        let clock = LockedBox(Date())

        init() async throws {
            pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(prefix: "outage"), size: 2))
            try await Migrator.migrate(pool, migrations: Schema.migrations)
            let secrets = SecretBox(masterKey: SecureRandom.bytes(32))
            let clients = ClientRepository(pool: pool, secrets: secrets)
            var settings = VerifyHarness.settings(environments: [.sandbox], gameID: 42)
            settings.webhookURL = "http://127.0.0.1:9/hooks"
            let client = try await clients.create(settings).client.clientID
            try await pool.withTransaction { connection in
                for key in ["a", "b", "c", "d"] {
                    try OutboxRepository.enqueue(
                        OutboxMessage(
                            clientID: client, target: .webhook, type: "transaction.verified", aggregateKey: key,
                            body: Data("{}".utf8)), on: connection)
                }
            }
            var configuration = VerifyHarness.fastOutbox()
            configuration.circuitThreshold = 2
            configuration.batchSize = 10
            configuration.probeInterval = .seconds(30)
            configuration.maxDelay = .seconds(3600)  // an open receiver's messages would be parked this long
            let clock = clock
            worker = OutboxWorker(
                outbox: OutboxRepository(pool: pool, secrets: secrets), clients: clients, configuration: configuration,
                logger: Logger(minimumLevel: .error),
                signingSecret: { _ in throw PostgresError(.connectionFailed, "the primary is gone") },
                now: { clock.get() })
            receiver = ReceiverCircuits.Receiver(clientID: client, target: OutboxTarget.webhook.rawValue)
        }

        /// Messages parked for an open receiver (due in more than a minute).
        func parked() async throws -> Int {
            try await pool.query(
                "SELECT count(*)::int AS n FROM outbox WHERE next_attempt_at > now() + interval '60 seconds'")[0]
                .decode("n", as: Int.self)
        }
    }

    /// A client directory that cannot be read (the database failing over) is no failure of the
    /// game server's receiver: the messages are tried again later, and the receiver stays closed.
    @Test func aClientDirectoryThatCannotBeReadOpensNoReceiver() async throws {
        let bare = try await Bare()
        defer { bare.pool.shutdown() }
        #expect(try await bare.worker.deliverDue() == 4)
        #expect(!bare.worker.circuits.isOpen(bare.receiver), "four failures, none of them the receiver's")
        let rows = try await bare.pool.query("SELECT attempts, last_error FROM outbox")
        #expect(rows.count == 4)
        for row in rows {
            #expect(try row.decode("attempts", as: Int.self) == 1, "tried again after a back-off")
            #expect(try row.decode("last_error", as: String?.self)?.contains("the client could not be read") == true)
        }
        #expect(try await bare.parked() == 0, "not parked for an open receiver")
    }

    /// An open receiver's probe whose client cannot be read learns nothing: another probe is asked
    /// for an interval later, instead of the receiver staying open with no probe ever again.
    @Test func aProbeWhoseClientCannotBeReadIsFollowedByAnother() async throws {
        let bare = try await Bare()
        defer { bare.pool.shutdown() }
        bare.worker.circuits.record(bare.receiver, succeeded: false)
        bare.worker.circuits.record(bare.receiver, succeeded: false)
        bare.clock.update { $0 += 31 }
        #expect(bare.worker.circuits.probesDue() == [bare.receiver])
        #expect(try await bare.worker.deliverDue() == 4, "one goes as the probe, the others are parked")
        #expect(try await bare.parked() == 4, "all of them parked for the open receiver")
        bare.clock.update { $0 += 31 }
        #expect(bare.worker.circuits.probesDue() == [bare.receiver], "the next probe is asked for")
    }

    /// A receiver that opened just before the worker stopped has its messages parked by the stop
    /// itself: the loop that would have parked them is gone.
    @Test func aStoppingWorkerCarriesOutWhatItsCircuitsChanged() async throws {
        let bare = try await Bare()
        defer { bare.pool.shutdown() }
        try await bare.worker.outbox.placeNew()  // each its aggregate's head, as the loop would have made it
        bare.worker.circuits.record(bare.receiver, succeeded: false)
        bare.worker.circuits.record(bare.receiver, succeeded: false)
        #expect(try await bare.parked() == 0)
        await bare.worker.stop()
        #expect(try await bare.parked() == 4)
    }

    /// The database refuses the statement that releases what waited for a receiver once its probe
    /// answered: the worker tries it again, and what waited is delivered then, not an hour later.
    @Test func aReleaseTheDatabaseRefusedIsTriedAgain() async throws {
        let held = try await ReceiverDownAtFirst.start(maxDelay: .seconds(900))
        defer { held.stop() }
        let (harness, receiver, offset) = (held.harness, held.receiver, held.offset)
        let first = (0..<3).map { String(2_000_000_000_893_000 + $0) }
        #expect(try await harness.verifyPurchases(first).allSatisfy { $0 == 200 })
        try await WebhookDelivery.waitUntil {
            try await harness.count("outbox WHERE next_attempt_at > now() + interval '600 seconds'") == first.count
        }
        let later = (0..<10).map { String(2_000_000_000_894_000 + $0) }
        #expect(try await harness.verifyPurchases(later).allSatisfy { $0 == 200 })
        #expect(
            try await harness.count("outbox WHERE next_attempt_at > now() + interval '600 seconds'")
                == first.count + later.count, "everything waits for the probe")

        // The first statement that makes several parked messages due at once (the release; the
        // probe makes one due) fails, as it would with the database away.
        try await harness.pool.execute("CREATE SEQUENCE refused_releases")
        try await harness.pool.execute(
            """
            CREATE FUNCTION refuse_first_release() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
              IF (SELECT count(*) FROM parked p JOIN released r USING (id)
                  WHERE p.next_attempt_at > now() + interval '600 seconds' AND r.next_attempt_at <= now()) > 1 THEN
                IF nextval('refused_releases') = 1 THEN
                  RAISE EXCEPTION 'the database is away';
                END IF;
              END IF;
              RETURN NULL;
            END $$
            """)
        try await harness.pool.execute(
            """
            CREATE TRIGGER refuse_first_release AFTER UPDATE ON outbox REFERENCING OLD TABLE AS parked NEW TABLE AS released
              FOR EACH STATEMENT EXECUTE FUNCTION refuse_first_release()
            """)

        receiver.up.set(true)
        offset.set(121)
        try await WebhookDelivery.waitUntil { try await harness.count("outbox WHERE status = 'pending'") == 0 }
        #expect(
            try await harness.pool.query("SELECT last_value FROM refused_releases")[0].decode(
                "last_value", as: Int.self)
                >= 2, "the release was refused once, then done")
        let acknowledged = receiver.acknowledged.compactMap(\.transactionID)
        #expect(acknowledged.sorted() == (first + later).sorted(), "every purchase's webhook once")
    }
}
