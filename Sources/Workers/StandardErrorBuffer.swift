import Foundation

/// Where `LogSink.standardError` puts lines: a buffer that a thread of its own writes to file
/// descriptor 2, so a request never waits on stderr (a slow pipe, a full disk, a paused reader).
/// Lines keep their order and are never interleaved. If more than `limit` bytes are waiting, new
/// lines are dropped and counted, and a line saying how many is written when there is room again:
/// memory stays bounded and requests keep flowing. The owner calls `flush` at exit.
package final class StandardErrorBuffer: @unchecked Sendable {
    static let limit = 4 << 20

    /// The line that says `count` lines were dropped, in the owner's log format.
    private let droppedLine: @Sendable (Int) -> String

    private let condition = NSCondition()  // guards every field below
    private var pending: [UInt8] = []
    private var spare: [UInt8] = []
    private var dropped = 0
    private var writing = false
    private var writerWaiting = false
    private var started = false
    /// The writer's thread, started with the first line, for the life of the process.
    private lazy var writer = BlockingWorkers<Void>(name: "log-writer")

    package init(droppedLine: @escaping @Sendable (Int) -> String) {
        self.droppedLine = droppedLine
    }

    package func append(_ line: String) {
        condition.lock()
        defer { condition.unlock() }
        if !started {
            started = true
            writer.submit { [self] _ in run() }
        }
        let wasIdle = pending.isEmpty && dropped == 0
        if pending.count + line.utf8.count + 1 > Self.limit {
            dropped += 1
        } else {
            pending.append(contentsOf: line.utf8)
            pending.append(UInt8(ascii: "\n"))
        }
        // Woken for the first line (or drop) after a quiet spell, or when much is waiting;
        // otherwise the writer comes back by itself within `gatherInterval`. A wake-up per line
        // would cost every request a context switch. A broadcast, because `flush` may be waiting
        // on the same condition and must not take the writer's wake-up.
        if writerWaiting && (wasIdle || pending.count >= Self.wakeThreshold) { condition.broadcast() }
    }

    /// How long the writer lets lines gather before writing them, and how many bytes make it write at once.
    static let gatherInterval: TimeInterval = 0.005
    static let wakeThreshold = 64 << 10

    /// Waits (briefly at a time) until everything appended so far is written.
    package func flush() {
        condition.lock()
        defer { condition.unlock() }
        // Real time on purpose: how long a process about to exit waits for stderr, not a rule's time.
        let deadline = Date().addingTimeInterval(5)
        condition.broadcast()  // the writer may be gathering: write now
        while started && (!pending.isEmpty || writing) && Date() < deadline {
            _ = condition.wait(until: Date().addingTimeInterval(0.01))
        }
    }

    private func run() {
        while true {
            condition.lock()
            while pending.isEmpty && dropped == 0 {
                writerWaiting = true
                condition.wait()
                writerWaiting = false
            }
            if pending.count < Self.wakeThreshold {
                writerWaiting = true
                _ = condition.wait(until: Date(timeIntervalSinceNow: Self.gatherInterval))
                writerWaiting = false
            }
            swap(&pending, &spare)
            let lost = dropped
            dropped = 0
            writing = true
            condition.unlock()
            if lost > 0 { spare.append(contentsOf: droppedLine(lost).utf8) }
            Self.writeAll(spare)
            spare.removeAll(keepingCapacity: spare.capacity <= 1 << 20)
            condition.lock()
            writing = false
            condition.unlock()
        }
    }

    private static func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count, let base = buffer.baseAddress {
                let written = Foundation.write(2, base + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                offset += written
            }
        }
    }
}
