import Dispatch
import Foundation
import Plugins
import ReceiptCore
import ReceiptGate

enum ServeCommand {
    static func run(context: CommandContext) async throws -> Int32 {
        let signals = TerminationSignals()  // installed first: a signal during start-up still shuts down cleanly
        // The process's one clock: the plugins and the service read the time from it.
        let plugins = PluginEnvironment(now: StartedPlugins.clock)
        let providers = try StartedPlugins.stores(plugins)
        let dialects = try StartedPlugins.dialects(plugins)
        let database = try await Database.opened(context.configuration, logger: context.logger)
        let service: Service
        do {
            service = try Service(
                configuration: context.configuration, logger: context.logger, database: database,
                stores: providers, dialects: dialects,
                dialectSettings: Plugins.all.dialects.map { ($0.displayName, $0.settings) }, now: plugins.now)
            try await service.start()
        } catch {
            await database.closed(logger: context.logger)
            throw error
        }
        let received = await signals.next()
        context.logger.info("received signal", ["signal": received == SIGTERM ? "SIGTERM" : "SIGINT"])
        await service.shutdown()
        return 0
    }
}

/// SIGTERM and SIGINT delivered as an async event. A second signal while shutting down exits at once.
final class TerminationSignals: @unchecked Sendable {
    private let queue = DispatchQueue(label: "receiptgate.signals")
    private var sources: [any DispatchSourceSignal] = []
    private var continuation: CheckedContinuation<Int32, Never>?
    private var pending: Int32?
    private var delivered = false

    init() {
        for number in [SIGTERM, SIGINT] {
            signal(number, SIG_IGN)  // let Dispatch, not the default action, handle it
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [unowned self] in self.received(number) }
            source.resume()
            sources.append(source)
        }
    }

    func next() async -> Int32 {
        await withCheckedContinuation { continuation in
            queue.async {
                if let pending = self.pending {
                    self.delivered = true
                    continuation.resume(returning: pending)
                } else {
                    self.continuation = continuation
                }
            }
        }
    }

    private func received(_ number: Int32) {
        if delivered || pending != nil {
            FileHandle.standardError.write(Data("receiptgate: second signal, exiting immediately\n".utf8))
            exit(130)
        }
        if let continuation {
            self.continuation = nil
            delivered = true
            continuation.resume(returning: number)
        } else {
            pending = number
        }
    }
}
