import Foundation
import TestSupport
import Testing

/// What a running service's group-commit batcher decided, read from its `/metrics`. A test that
/// claims to cover the group-commit path checks with it that the batcher really answered its
/// requests: a change that sends them the ordinary way (a webhook, an effect) would otherwise
/// leave the test passing while it covers nothing of the batcher.
struct GroupCommitCounts: Equatable, CustomStringConvertible {
    /// Answered by the batch statements: recorded, seen before, or another game's.
    var settled = 0
    /// Found by the batch statement's version check with a client changed since authentication.
    var stale = 0

    static func + (a: Self, b: Self) -> Self { Self(settled: a.settled + b.settled, stale: a.stale + b.stale) }

    var description: String { "settled \(settled), stale \(stale)" }

    /// From the service listening on `port` (whose `/metrics` is on its main listener).
    static func read(port: Int) async throws -> GroupCommitCounts {
        let metrics = try await RawHTTP.request(port: port, path: "/metrics").text
        func value(_ result: String) throws -> Int {
            let prefix = "receiptgate_group_commit_verifications_total{result=\"\(result)\"} "
            let line = try #require(
                metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }, "no \(result) count in /metrics")
            return try #require(Int(line.dropFirst(prefix.count)))
        }
        return GroupCommitCounts(settled: try value("settled"), stale: try value("stale"))
    }

    /// Summed over several services sharing one database.
    static func read(ports: [Int]) async throws -> GroupCommitCounts {
        var total = GroupCommitCounts()
        for port in ports { total = total + (try await read(port: port)) }
        return total
    }
}
