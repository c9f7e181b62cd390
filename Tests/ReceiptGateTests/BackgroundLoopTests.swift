import Foundation
import TestSupport
import Testing

@testable import ReceiptGate

/// The one loop type the service's repeated work runs on.
@Suite struct BackgroundLoops {
    struct Broke: Error {}

    /// Runs back to back while the body says more is due, pauses when it does not; a failure is
    /// logged under the loop's name and the loop goes on; `stop` ends it and waits for the end.
    @Test func runsAgainWhileMoreIsDueLogsFailuresAndStops() async throws {
        let log = ServerLogCapture()
        let runs = LockedBox(0), firsts = LockedBox(0)
        // Three runs back to back (more due), then a failure.
        let loop = BackgroundLoop(
            "test sweep", every: .seconds(3600), logger: log.logger, first: { firsts.update { $0 += 1 } }
        ) {
            let run = runs.update {
                $0 += 1; return $0
            }
            if run <= 3 { return .again }
            if run == 4 { throw Broke() }
            return .pause
        }
        loop.start()
        loop.start()  // a second start keeps the first task
        // After the failure the loop pauses for its interval (an hour): stopping finds it there.
        #expect(await eventually { runs.get() == 4 && log.captured.contains { $0.contains("test sweep failed") } })
        await loop.stop()
        #expect(runs.get() == 4, "a failure pauses like any run; stopped during that pause")
        #expect(firsts.get() == 1)
    }
}
