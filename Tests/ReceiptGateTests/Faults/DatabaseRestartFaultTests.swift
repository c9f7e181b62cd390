import AppStore
import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// Postgres killed (`pg_ctl stop -m immediate`, a crash to its clients) and started again while 32
/// game servers verify fresh purchases: while it is down the service answers 503 with
/// `Retry-After` (never a 502 that reads as a store failure, never a 500), it recovers by itself
/// once the database is back, and every purchase it answered 200 for is in the ledger.
@Suite(.serialized) struct DatabaseRestartFaults {
    @Test func verificationsDuringARestartAre503ThenRecoverWithEvery200Recorded() async throws {
        let cluster = try await TestDatabase.makePrivateCluster()
        let pki = try AppleTestPKI()
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [pki.root]))
        let running = try await FaultService.start(
            databaseURL: try cluster.connectionString, provider: provider, environments: [.sandbox])
        defer { running.stop() }
        let service = running.service, database = running.database, client = running.client

        struct Answer: Sendable {
            let status: Int; let transactionID: String; let retryAfter: String?; let error: String?;
            let at: ContinuousClock.Instant
        }
        let answers = LockedBox<[Answer]>([])
        let loading = LockedBox(true)
        let counter = LockedBox(0)
        let load = Task {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<32 {
                    group.addTask {
                        while loading.get() {
                            let id = String(
                                3_000_000_000_000_000
                                    + counter.update { value -> Int in
                                        value += 1; return value
                                    })
                            guard
                                let receipt = try? pki.sign(
                                    AppleTestPKI.transaction(["transactionId": id, "originalTransactionId": id])),
                                let response = try? await client.post(
                                    "/v1/verify", json: ["store": "app_store", "receipt": receipt])
                            else {
                                answers.update {
                                    $0.append(
                                        Answer(
                                            status: 0, transactionID: id, retryAfter: nil, error: "no answer", at: .now)
                                    )
                                }
                                continue
                            }
                            let error = (try? response.json())?["error"] as? String
                            answers.update {
                                $0.append(
                                    Answer(
                                        status: response.status, transactionID: id,
                                        retryAfter: response.headers["retry-after"],
                                        error: error, at: .now))
                            }
                        }
                    }
                }
            }
        }

        /// Polls the answers until `condition` holds or 20 s pass (the assertions below then say what was missing).
        func waitFor(_ condition: ([Answer]) -> Bool) async throws {
            let deadline = ContinuousClock.now + .seconds(20)
            while !condition(answers.get()) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        // The load is under way (a few purchases recorded), then the database goes away until the
        // service has answered 32 requests (one per game server on average) while it was gone.
        try await waitFor { $0.filter { $0.status == 200 }.count >= 8 }
        try await onOwnThread { try cluster.stopImmediately() }
        let stopped = ContinuousClock.now
        try await waitFor { $0.filter { $0.status == 503 && $0.at > stopped }.count >= 32 }
        _ = try await onOwnThread { try cluster.start() }
        let restarted = ContinuousClock.now
        // Recovered: a 200 answered after the database came back, waited for (the bound only ends a
        // wait for a service that never recovers; how fast it does is the fault drill's to measure).
        var recovered: ContinuousClock.Instant?
        while recovered == nil, ContinuousClock.now - restarted < .seconds(40) {
            try await Task.sleep(for: .milliseconds(100))
            recovered = answers.get().first { $0.status == 200 && $0.at > restarted }?.at
        }
        // Enough answered after the return for the ledger check below to mean something.
        try await waitFor { $0.filter { $0.status == 200 && $0.at > restarted }.count >= 32 }
        loading.set(false)
        await load.value

        let all = answers.get()
        let outage = all.filter { $0.status == 503 }
        #expect(!outage.isEmpty, "no request was answered while the database was down")
        #expect(outage.allSatisfy { $0.retryAfter == "1" && $0.error == "VERIFIER_ERROR" })
        let others = all.filter { ![200, 503].contains($0.status) }
        #expect(others.isEmpty, "statuses besides 200 and 503: \(Set(others.map { "\($0.status) \($0.error ?? "")" }))")
        _ = try #require(recovered, "no verification succeeded within 40 s of the database's return")

        // Every 200 has its row.
        let verified = Set(all.filter { $0.status == 200 }.map(\.transactionID))
        let rows = try await database.pool.query("SELECT transaction_id FROM transactions")
        let recorded = Set(try rows.map { try $0.decode("transaction_id", as: String.self) })
        #expect(verified.count > 32)
        #expect(
            verified.subtracting(recorded).isEmpty,
            "answered 200 but not recorded: \(verified.subtracting(recorded).prefix(5))")
        await service.shutdown()
        try await onOwnThread { try cluster.stop() }
    }
}
