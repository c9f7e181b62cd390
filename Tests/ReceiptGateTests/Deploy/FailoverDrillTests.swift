import Foundation
import TestSupport
import Testing

/// Deploy/ha/drill.sh, the failover drill an operator runs, as a test: three PostgreSQL nodes
/// under Patroni and etcd, ReceiptGate on a multi-host DATABASE_URL, 32 connections verifying
/// fresh purchases and 4 reading players' entitlements, and the leader's Patroni and postmaster
/// killed with SIGKILL.
@Suite struct FailoverDrill {
    static let etcdInstalled = FileManager.default.isExecutableFile(atPath: "/usr/bin/etcd")

    @Test(
        .enabled(if: etcdInstalled, "etcd-server is not installed (scripts/setup.sh installs it)"),
        .timeLimit(.minutes(10)))
    func primaryLossLosesNoAcknowledgedVerification() async throws {
        let root = DeploymentArtifacts.deploy.deletingLastPathComponent()
        let directory = TestDatabase.temporaryDirectory("ha-drill").appendingPathComponent("cluster").path
        // Ports of their own, away from a drill an operator may be running on the default base.
        let portBase = 20_000 + Int(getpid() % 400) * 25
        let drill = try await ChildProcess.run(
            root.appendingPathComponent("Deploy/ha/drill.sh").path, [directory],
            environment: [
                "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin", "HOME": "/root",
                "RECEIPTGATE_BIN_DIR": URL(fileURLWithPath: Binary.path).deletingLastPathComponent().path,
                "RECEIPTGATE_HA_PORT_BASE": String(portBase), "RECEIPTGATE_DRILL_PURCHASES": "15000",
            ], timeout: .seconds(540))
        let last = try #require(
            drill.stdout.split(separator: "\n").last, "no figures; stderr: \(drill.stderr.suffix(3000))")
        print("FailoverDrill: \(last)")
        let figures = try Binary.json(String(last))
        #expect(drill.status == 0, "\(figures["checks_failed"] ?? drill.stderr.suffix(3000))")
        #expect((figures["checks_failed"] as? [Any])?.isEmpty == true)
        #expect(figures["acknowledged_lost"] as? Int == 0)
        #expect((figures["acknowledged"] as? Int ?? 0) > 0)
        // A standby may promote once the dead leader's key has expired (ttl after its last renewal);
        // the service must be answering 200 again within moments of that.
        let recovery = try #require(figures["recovery_seconds"] as? Double)
        let ttl = try #require(figures["patroni_ttl"] as? Double),
            loopWait = try #require(figures["patroni_loop_wait"] as? Double)
        #expect(recovery < ttl + loopWait + 3, "verifications succeeded again only after \(recovery) s (ttl \(ttl) s)")
        let answers = try #require(figures["answers"] as? [String: Int])
        #expect(Set(answers.keys).isSubset(of: ["200", "503"]), "\(answers)")
        #expect(figures["readyz_not_ready_seen"] as? Bool == true)
        #expect(figures["client_cache_listening_again"] as? Bool == true)
        // The outbox workers carried on on the new primary: every webhook owed after the kill came.
        let webhooks = try #require(figures["webhooks_after_failover_delivered"] as? String).split(separator: "/")
        #expect(
            webhooks.count == 2 && webhooks[0] == webhooks[1] && webhooks[0] != "0",
            "\(webhooks); the service's outbox log: \(Self.outboxLog(in: directory))")
        #expect(figures["old_leader_rejoined_seconds"] as? Double != nil)
        // DATABASE_READ_URL: the ledger read API answered from a standby, and /metrics shows its lag.
        #expect(figures["ledger_read_status"] as? Int == 200)
        #expect(figures["ledger_read_from_standby"] as? Bool == true)
        #expect(figures["read_standby_lag_seconds"] is String)
        // Entitlement reads ran beside the load: served by the standby, answered through the failover.
        #expect(
            Set((figures["entitlement_reads"] as? [String: Int] ?? [:]).keys).isSubset(of: ["200", "503"]),
            "\(figures["entitlement_reads"] ?? "none")")
        #expect((figures["entitlement_reads_from_standby"] as? Int ?? 0) > 0)
        let during = try #require(figures["entitlement_reads_answered_during_failover"] as? String).split(
            separator: "/")
        #expect(during.count == 2 && (Int(during[0]) ?? 0) > 0, "\(during)")
    }

    /// What the service logged about its outbox and receivers (drill.sh keeps its log): the last
    /// lines, for a drill whose webhooks did not all come.
    static func outboxLog(in directory: String) -> String {
        let log = (try? String(contentsOfFile: directory + "/service.log", encoding: .utf8)) ?? ""
        let lines = log.split(separator: "\n").filter { $0.contains("outbox") || $0.contains("receiver") }
        return lines.suffix(20).joined(separator: "\n")
    }
}
