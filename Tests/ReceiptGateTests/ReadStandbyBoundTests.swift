import Foundation
import Postgres
import TestSupport
import Testing

/// The read bound measured against the primary, not by the standby's own account: a standby that
/// has not even received a claim (its WAL sender stopped: a stalled link, which the standby cannot
/// see) is skipped for the primary; a standby promoted out from under the read URL (a failover) is
/// no standby, and reads go to the primary by name.
@Suite struct ReadStandbyBound {
    static func served(_ h: EntitlementHarness, _ label: String) async throws -> Int {
        let metrics = try await RawHTTP.request(port: h.harness.service.port, path: "/metrics").text
        let prefix = "receiptgate_ledger_reads_total" + label + " "
        return metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }.flatMap { $0.split(separator: " ").last }
            .flatMap { Int($0) } ?? -1
    }

    static let onStandby = #"{served_by="standby"}"#
    static let lagging = #"{served_by="primary",reason="lagging"}"#
    static let notStandby = #"{served_by="primary",reason="not_standby"}"#

    /// A harness reading from `standby`, once the standby has replayed the catalog and served a read.
    static func start(
        primary: EmbeddedCluster, standby: StreamingStandby
    ) async throws -> (EntitlementHarness, PostgresPool) {
        let h = try await EntitlementHarness.start { configuration in
            configuration.databaseURL = try? primary.connectionString
            configuration.databaseReadURL = standby.connectionString
            configuration.readMaxLagMilliseconds = 1000
        }
        try await h.mapCatalog()
        let onStandby = PostgresPool(.init(connectionString: standby.connectionString, size: 1))
        try await WebhookDelivery.waitUntil {
            let before = try await served(h, Self.onStandby)
            _ = try await h.owned("nobody")
            return try await served(h, Self.onStandby) > before
        }
        return (h, onStandby)
    }

    @Test(.timeLimit(.minutes(4)))
    func aStandbyThatReceivedNothingIsSkippedThoughItHasReplayedAllItHas() async throws {
        let primary = try await TestDatabase.makePrivateCluster()
        let standby = try await StreamingStandby.start(following: primary, applyDelay: "0")
        defer { standby.stop() }
        let (h, onStandby) = try await Self.start(primary: primary, standby: standby)
        defer { h.stop(); onStandby.shutdown() }
        let onPrimary = PostgresPool(.init(connectionString: try primary.connectionString, size: 1))
        defer { onPrimary.shutdown() }
        let sender = try #require(
            try await onPrimary.query("SELECT pid FROM pg_stat_replication").first?.decode("pid", as: Int32.self))
        // The link stalls: the standby stays "streaming", with nothing new to replay.
        #expect(kill(sender, SIGSTOP) == 0)
        var resumed = false
        defer { if !resumed { kill(sender, SIGCONT) } }

        try await h.claimApple(
            [
                "transactionId": "2000000000981001", "originalTransactionId": "2000000000981001", "productId": "noads",
                "type": "Non-Consumable",
            ], for: "stalled")
        let standbyHasIt = {
            try await onStandby.query("SELECT count(*) AS n FROM player_entitlements WHERE player_id = 'stalled'")[0]
                .decode("n", as: Int.self) == 1
        }
        // The bound is a time: a read more than RECEIPTGATE_READ_MAX_LAG_MS after the claim must show
        // it, however the standby sees itself (one sooner may rightly be served a moment stale).
        try await Task.sleep(for: .milliseconds(1100))
        let before = try await Self.served(h, Self.lagging)
        let read = try await h.owned("stalled")
        #expect(read.byName["no_ads"] != nil, "a read past the bound shows the claim: \(read.byName)")
        #expect(try await !standbyHasIt(), "the standby had not received the claim, so the primary answered")
        #expect(try await Self.served(h, Self.lagging) > before)

        #expect(kill(sender, SIGCONT) == 0)
        resumed = true
        try await WebhookDelivery.waitUntil { try await standbyHasIt() }
        try await WebhookDelivery.waitUntil {
            let before = try await Self.served(h, Self.onStandby)
            let answer = try await h.owned("stalled")
            let after = try await Self.served(h, Self.onStandby)
            return answer.byName["no_ads"] != nil && after > before
        }
    }

    @Test(.timeLimit(.minutes(4)))
    func aPromotedStandbyIsNoStandby() async throws {
        let primary = try await TestDatabase.makePrivateCluster()
        let standby = try await StreamingStandby.start(following: primary, applyDelay: "0")
        defer { standby.stop() }
        let (h, onStandby) = try await Self.start(primary: primary, standby: standby)
        defer { h.stop(); onStandby.shutdown() }
        try standby.promote()
        try await WebhookDelivery.waitUntil {
            try await onStandby.query("SELECT pg_is_in_recovery() AS r")[0].decode("r", as: Bool.self) == false
        }

        // Written on the primary after the split: only the primary can show it.
        try await h.claimApple(
            [
                "transactionId": "2000000000982001", "originalTransactionId": "2000000000982001", "productId": "noads",
                "type": "Non-Consumable",
            ], for: "promoted")
        let before = try await Self.served(h, Self.notStandby)
        let read = try await h.owned("promoted")
        #expect(
            read.byName["no_ads"] != nil, "the read went to the primary, not to the promoted server: \(read.byName)")
        #expect(try await Self.served(h, Self.notStandby) > before)
    }
}
