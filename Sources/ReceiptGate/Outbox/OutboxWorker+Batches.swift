import Foundation
import ReceiptCore
import Synchronization

/// What one turn of the worker's loop starts, as sends: the webhooks of a client that batches
/// (`--webhook-batch`) share a POST, up to its batch size; every other message is a send of its
/// own. Slots count messages, not POSTs, so a client's share of them holds as it does unbatched,
/// and a POST carries at most what one turn starts of its client. Each turn starts at most one
/// message of an aggregate, its head, so order within an aggregate holds across POSTs as it does
/// for single sends.
struct OutboxSends {
    struct Send {
        var events: [OutboxRepository.Claimed]
        /// A batching client's webhooks (`OutboxWorker.deliverBatch`), else one message alone.
        let batched: Bool
    }

    private(set) var all: [Send] = []

    /// `events` grouped, each client's batch size as in `batches` (1 when absent).
    init(_ events: [OutboxRepository.Claimed], batches: [String: Int]) {
        // The batched send of each client that still has room.
        var filling: [String: Int] = [:]
        for event in events {
            let batch = event.target == .webhook ? batches[event.clientID] ?? 1 : 1
            if batch > 1, let index = filling[event.clientID], all[index].events.count < batch {
                all[index].events.append(event)
                continue
            }
            all.append(Send(events: [event], batched: batch > 1))
            if batch > 1 { filling[event.clientID] = all.count - 1 }
        }
    }
}

extension OutboxWorker {
    /// The webhook batch (`Client.webhookBatch`) of each client with two webhooks or more among
    /// `events`: only those can share a POST. Read through the client directory, as each send
    /// reads its client's secret.
    func webhookBatches(of events: [OutboxRepository.Claimed]) async -> [String: Int] {
        var webhooks: [String: Int] = [:]
        for event in events where event.target == .webhook { webhooks[event.clientID, default: 0] += 1 }
        var batches: [String: Int] = [:]
        for (clientID, count) in webhooks where count > 1 {
            batches[clientID] = (try? await signingSecret(clientID))?.0.webhookBatch ?? 1
        }
        return batches
    }

    /// Sends one client's webhooks batched and records each message's outcome. `answered` as in
    /// `deliver`: once the receiver acknowledged them, before the marks are recorded, else at the
    /// end. The client's setting is read again: lowered since they were grouped, they go in POSTs
    /// of the new size at once (messages of different aggregates, so in no order among
    /// themselves); set back to 1, each goes alone in the single format.
    func deliverBatch(_ events: [OutboxRepository.Claimed], answered: @escaping @Sendable () -> Void) async {
        let once = AnsweredOnce(answered)
        defer { once.call() }
        guard let clientID = events.first?.clientID else { return }
        let receiver = ReceiverCircuits.Receiver(clientID: clientID, target: OutboxTarget.webhook.rawValue)
        if case .park(let seconds) = circuits.decide(receiver) {
            await park(events, for: seconds, receiver: receiver)
            return
        }
        guard let (client, secret) = try? await signingSecret(clientID) else {
            await recordFailure(events, "client has no webhook URL (or is disabled)", receiver: receiver)
            return
        }
        let size = client.webhookBatch
        guard size > 1 else {
            await withTaskGroup(of: Void.self) { group in
                for event in events { group.addTask { await self.deliver(event) } }
            }
            return
        }
        let parts = stride(from: 0, to: events.count, by: size).map { Array(events[$0..<min($0 + size, events.count)]) }
        await withTaskGroup(of: Void.self) { group in
            for part in parts {
                group.addTask {
                    let failure = await self.postBatch(part, client: client, secret: secret)
                    guard failure == nil else {
                        return await self.recordFailure(part, failure ?? "", receiver: receiver)
                    }
                    await self.follow(
                        self.circuits.record(
                            receiver, succeeded: true, failedBefore: part.contains { $0.attempts > 0 }),
                        for: receiver)
                    do {
                        // One POST: its slots free as soon as its marks are queued.
                        try await self.delivered.delivered(part) { if parts.count == 1 { once.call() } }
                    } catch {
                        // The leases run out and other attempts follow: at least once, never lost.
                        self.logger.error(
                            "could not record an outbox outcome",
                            ["event.id": part[0].eventID, "events": String(part.count), "error": "\(error)"])
                    }
                }
            }
        }
    }

    /// A POST of `events` failed: the receiver's circuit told, and each message's attempt recorded.
    private func recordFailure(
        _ events: [OutboxRepository.Claimed], _ failure: String, receiver: ReceiverCircuits.Receiver
    ) async {
        await follow(
            circuits.record(receiver, succeeded: false, failedBefore: events.contains { $0.attempts > 0 }),
            for: receiver)
        for event in events {
            do { try await recordFailure(event, failure, final: false) } catch {
                // The lease runs out and another attempt follows: at least once, never lost.
                logger.error("could not record an outbox outcome", ["event.id": event.eventID, "error": "\(error)"])
            }
        }
    }

    /// Posts `events` as one batched webhook: `{"events": [envelope, …]}`, each envelope the bytes
    /// it is stored as (the same on every attempt), signed once over the whole body, with
    /// `X-Event-Count`. Nil when the receiver acknowledged them all, else why not.
    func postBatch(_ events: [OutboxRepository.Claimed], client: Client, secret: String) async -> String? {
        var body = Data()
        body.reserveCapacity(events.reduce(16) { $0 + $1.payload.utf8.count + 1 })
        body.append(contentsOf: #"{"events":["#.utf8)
        for (index, event) in events.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: event.payload.utf8)
        }
        body.append(contentsOf: "]}".utf8)
        return await post(
            body, for: .webhook, to: client, secret: secret, headers: [("X-Event-Count", String(events.count))])
    }
}

/// A callback run at most once, from whichever task gets there first.
private final class AnsweredOnce: Sendable {
    private let callback: Mutex<(@Sendable () -> Void)?>

    init(_ callback: @escaping @Sendable () -> Void) { self.callback = Mutex(callback) }

    func call() { callback.withLock { $0.take() }?() }
}
