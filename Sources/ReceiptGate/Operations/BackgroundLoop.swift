import ReceiptCore
import Synchronization

/// Something the service runs beside its requests until shutdown: the outbox worker, the stores'
/// pollers, the client cache's listener, the loops below. Started in one list; shutdown stops
/// them in reverse, so what started later (and may use what started before) stops first.
protocol BackgroundPart: Sendable {
    /// Asks the part to stop without waiting (shutdown asks every part first, then waits for each).
    func cancel()
    func stop() async
}

extension BackgroundPart {
    func cancel() {}
}

/// Work repeated while the service runs: `body` runs, then the loop pauses for `interval` (or
/// runs again at once when the body says more is due), until stopped. A failure is logged under
/// the loop's name and the loop goes on after its pause: every run is a fresh attempt.
final class BackgroundLoop: BackgroundPart {
    /// What the body found: more due now (a batch came back full), or nothing until the next pause.
    enum Pace: Sendable { case again, pause }

    let name: String
    let interval: Duration
    private let body: @Sendable () async throws -> Pace
    private let first: (@Sendable () async -> Void)?
    private let logger: Logger
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// `first` runs once before the first run of `body` (what must be done once per process).
    init(
        _ name: String, every interval: Duration, logger: Logger, first: (@Sendable () async -> Void)? = nil,
        _ body: @escaping @Sendable () async throws -> Pace
    ) {
        self.name = name
        self.interval = interval
        self.logger = logger
        self.first = first
        self.body = body
    }

    /// Starts the first run now. A loop started twice keeps its first task.
    func start() {
        task.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in await run() }
        }
    }

    /// Ends the pause, or the run at its next await: no new run starts.
    func cancel() {
        task.withLock { $0 }?.cancel()
    }

    /// Cancels the pause (a run under way finishes its statement) and waits for the loop to end.
    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        await running?.value
    }

    private func run() async {
        await first?()
        while !Task.isCancelled {
            var pace = Pace.pause
            do { pace = try await body() } catch  where !Task.isCancelled {
                logger.warning("\(name) failed", ["error": "\(error)"])
            } catch {}
            if pace == .pause { try? await Task.sleep(for: interval) }
        }
    }
}

extension OutboxWorker: BackgroundPart {}
extension StorePollRunner: BackgroundPart {}
extension PrimaryWALPositions: BackgroundPart {}
