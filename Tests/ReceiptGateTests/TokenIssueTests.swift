import Foundation
import HiveAxyl
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A token is stored only while its client is still enabled at the version whose secret asked for
/// it: a rotation or disable, committed or still committing, leaves no token behind that outlives it.
@Suite struct TokenIssueAgainstClientChanges {
    static let kind = "test.access"

    static func request(_ clientID: String, version: Int64) -> TokenRequest {
        TokenRequest(kind: kind, clientID: clientID, lifetime: .seconds(600), clientVersion: version)
    }

    static func version(_ harness: VerifyHarness) async throws -> Int64 {
        try await harness.pool.query("SELECT version FROM clients WHERE id = \(harness.client.clientID)")[0].decode(
            "version")
    }

    @Test func aVersionOlderThanTheClientsOrADisabledClientStoresNothing() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let (clients, tokens, id) = (
            harness.service.clients, harness.service.repositories.tokens, harness.client.clientID
        )
        let before = try await Self.version(harness)
        _ = try await clients.rotateSecret(id)
        await #expect(throws: ClientChangedSinceAuthentication.self) {
            try await tokens.issue(Self.request(id, version: before))
        }
        #expect(try await harness.count("tokens") == 0)

        let current = try await Self.version(harness)
        let issued = try await tokens.issue(Self.request(id, version: current))
        #expect(try await tokens.resolve(issued.token, kind: Self.kind) != nil)

        _ = try await clients.disable(id)
        let disabled = try await Self.version(harness)
        await #expect(throws: ClientChangedSinceAuthentication.self) {
            try await tokens.issue(Self.request(id, version: disabled))
        }
        #expect(try await harness.count("tokens") == 1)
    }

    /// The rotation is still committing when the token is inserted: the insert waits for it and
    /// then stores nothing. (Inserted at once, the token would carry a time after the rotation's
    /// and stay valid once it commits.)
    @Test func aRotationStillCommittingIsWaitedForAndThenRefusesTheToken() async throws {
        let harness = try await VerifyHarness.start()
        defer { harness.stop() }
        let (tokens, id) = (harness.service.repositories.tokens, harness.client.clientID)
        let version = try await Self.version(harness)
        let rotation = try await HeldRotation.begin(on: harness.pool, clientID: id)
        defer { rotation.release() }
        let outcome = LockedBox<Result<IssuedToken, any Error>?>(nil)
        let issuing = Task {
            do { outcome.set(.success(try await tokens.issue(Self.request(id, version: version)))) } catch {
                outcome.set(.failure(error))
            }
        }
        try await HeldRotation.waitUntilBlockedOrDone(harness.pool) { outcome.get() != nil }
        try await rotation.commit()
        await issuing.value
        let result = try #require(outcome.get())
        #expect(throws: ClientChangedSinceAuthentication.self) { try result.get() }
        #expect(try await harness.count("tokens") == 0)
    }

    /// The same race over HTTP: `/auth/v1/token` with the secret being rotated answers as for a
    /// wrong secret, and no token exists afterwards.
    @Test func aHiveAxylTokenAskedForDuringARotationIsRefused() async throws {
        let harness = try await VerifyHarness.start(dialects: [HiveAxyl()])
        defer { harness.stop() }
        let caller = try await HiveAxylCaller.on(harness)
        let rotation = try await HeldRotation.begin(on: harness.pool, clientID: caller.clientID)
        defer { rotation.release() }
        let response = LockedBox<RawHTTP.Response?>(nil)
        let asking = Task { response.set(try await caller.tokenResponse(basic: true)) }
        try await HeldRotation.waitUntilBlockedOrDone(harness.pool) { response.get() != nil }
        try await rotation.commit()
        try await asking.value
        let answer = try #require(response.get())
        #expect(answer.status == 401, "\(answer.text)")
        #expect(try answer.json()["error"] as? String == "invalid_client")
        #expect(try await harness.count("tokens") == 0)
    }
}

/// A rotation's statement on the client row (its new secret box aside), held uncommitted until
/// `commit()`: what other sessions see while a rotation runs — the row locked, its old version
/// still the visible one.
final class HeldRotation: Sendable {
    private let gate = DispatchSemaphore(value: 0)
    private let transaction: LockedBox<Task<Void, any Error>?> = LockedBox(nil)

    static func begin(on pool: PostgresPool, clientID: String) async throws -> HeldRotation {
        let held = HeldRotation()
        let (updated, signal) = AsyncStream<Void>.makeStream()
        let gate = held.gate
        held.transaction.set(
            Task {
                try await pool.withTransaction { connection in
                    defer { signal.finish() }
                    try connection.execute(
                        "UPDATE clients SET secret_rotated_at = clock_timestamp(), updated_at = now() WHERE id = \(clientID)"
                    )
                    signal.yield()
                    gate.wait()  // on the pool's own thread, not Swift's cooperative pool
                }
            })
        for await _ in updated { return held }
        try await held.commit()  // the update failed: its error surfaces here
        throw RawHTTP.Failure(description: "the held rotation did not start")
    }

    func commit() async throws {
        release()
        try await transaction.get()?.value
    }

    /// Lets the transaction end (a test that failed half-way must not leave it waiting).
    func release() { gate.signal() }

    /// Polls until some session of this database waits for a row lock, or `done` says the other
    /// side already finished without waiting; fails after ten seconds.
    static func waitUntilBlockedOrDone(_ pool: PostgresPool, done: @Sendable () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if done() { return }
            let waiting = try await pool.query(
                """
                SELECT count(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'
                """)[0].decode("n", as: Int.self)
            if waiting > 0 { return }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("nothing waited for the rotation's row lock within 10 s")
    }
}
