import Foundation
import TestSupport
import Testing

@Suite struct TestKeysAtExit {
    /// The probe (Tests/TestKeysExitProbe) asks TestKeys for one key and exits straight away, as a
    /// test process does after its last test. Exiting while OpenSSL is making a key crashed about
    /// one exit in eight on a 2-core machine (OpenSSL's exit handlers free what the key generation
    /// is using), so one clean exit proves little: forty, two at a time, must all be 0 (keys made
    /// ahead of need would pass that less than once in a hundred tries).
    @Test func processUsingTestKeysExitsCleanlyEveryTime() async throws {
        let probe = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("TestKeysExitProbe").path
        try #require(
            FileManager.default.isExecutableFile(atPath: probe), "\(probe) is not built (swift build builds it)")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for lane in 0..<2 {
                group.addTask {
                    for run in 1...20 {
                        // No backtrace on a crash: it would take seconds, and the status says what happened.
                        // A run takes well under a second alone, but beside the whole suite on two cores
                        // one was seen past 20 s (killed: 137); a crash is a signal whatever the bound.
                        let result = try await ChildProcess.run(
                            probe, [], environment: ["PATH": "/usr/bin:/bin", "SWIFT_BACKTRACE": "enable=no"],
                            timeout: .seconds(120))
                        #expect(
                            result.status == 0,
                            "run \(run) of lane \(lane) exited with status \(result.status): \(result.stderr.suffix(1000))"
                        )
                    }
                }
            }
            try await group.waitForAll()
        }
    }
}
