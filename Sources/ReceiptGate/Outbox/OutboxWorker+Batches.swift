import Foundation
import ReceiptCore

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

    /// Sends one client's webhooks batched, in as few POSTs as its setting allows when sent (one,
    /// unless it was lowered since they were grouped; set back to 1, each goes alone in the single
    /// format), and records each message's outcome. `answered` as in `deliver`: once every POST
    /// was answered a success, before the marks are recorded, else at the end.
    func deliverBatch(_ events: [OutboxRepository.Claimed], answered: @Sendable () -> Void) async {
        var slotFreed = false
        defer { if !slotFreed { answered() } }
        guard let clientID = events.first?.clientID else { return }
        let receiver = ReceiverCircuits.Receiver(clientID: clientID, target: OutboxTarget.webhook.rawValue)
        if case .park(let seconds) = circuits.decide(receiver) {
            await park(events, for: seconds, receiver: receiver)
            return
        }
        let signer = try? await signingSecret(clientID)
        let size = max(1, signer?.0.webhookBatch ?? events.count)
        var sent: [OutboxRepository.Claimed] = []
        for start in stride(from: 0, to: events.count, by: size) {
            let part = Array(events[start..<min(start + size, events.count)])
            let failure: String? =
                if let (client, secret) = signer {
                    size > 1
                        ? await postBatch(part, client: client, secret: secret)
                        : await post(
                            Data(part[0].payload.utf8), for: .webhook, to: client, secret: secret,
                            headers: [("X-Event-Id", part[0].eventID), ("X-Event-Type", part[0].type)])
                } else {
                    "client has no webhook URL (or is disabled)"
                }
            await follow(
                circuits.record(receiver, succeeded: failure == nil, failedBefore: part.contains { $0.attempts > 0 }),
                for: receiver)
            guard let failure else {
                sent += part
                continue
            }
            for event in part {
                do { try await recordFailure(event, failure, final: false) } catch {
                    // The lease runs out and another attempt follows: at least once, never lost.
                    logger.error(
                        "could not record an outbox outcome", ["event.id": event.eventID, "error": "\(error)"])
                }
            }
        }
        guard !sent.isEmpty else { return }
        do {
            try await delivered.delivered(sent) {
                slotFreed = true
                answered()
            }
        } catch {
            logger.error(
                "could not record an outbox outcome",
                ["event.id": sent[0].eventID, "events": String(sent.count), "error": "\(error)"])
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
