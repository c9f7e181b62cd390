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
    /// A client, and the secret its messages are signed with.
    typealias Signer = (client: Client, secret: String)

    /// The client and secret of each client with two webhooks or more among `events` that batches
    /// them (`Client.webhookBatch` over 1): only those share a POST. Read through the client
    /// directory once a turn, as a single send reads its client's; a POST is signed as its turn
    /// read the client, so a changed setting applies from the next turn on.
    func batchingSigners(of events: [OutboxRepository.Claimed]) async -> [String: Signer] {
        var webhooks: [String: Int] = [:]
        for event in events where event.target == .webhook { webhooks[event.clientID, default: 0] += 1 }
        var signers: [String: Signer] = [:]
        for (clientID, count) in webhooks where count > 1 {
            if let signer = try? await signingSecret(clientID), signer.0.webhookBatch > 1 {
                signers[clientID] = (signer.0, signer.1)
            }
        }
        return signers
    }

    /// Sends one client's webhooks in one batched POST and records each message's outcome.
    /// `answered` as in `deliver`: after a success was answered (before it is recorded), else at
    /// the end.
    func deliverBatch(
        _ events: [OutboxRepository.Claimed], signer: Signer, answered: @Sendable () -> Void
    ) async {
        var slotFreed = false
        defer { if !slotFreed { answered() } }
        guard let first = events.first else { return }
        let receiver = ReceiverCircuits.Receiver(clientID: first.clientID, target: OutboxTarget.webhook.rawValue)
        if case .park(let seconds) = circuits.decide(receiver) {
            await park(events, for: seconds, receiver: receiver)
            return
        }
        let failure = await postBatch(events, client: signer.client, secret: signer.secret)
        circuits.record(receiver, succeeded: failure == nil, failedBefore: events.contains { $0.attempts > 0 })
        if let failure {
            for event in events {
                do { try await recordFailure(event, failure, final: false) } catch {
                    // The lease runs out and another attempt follows: at least once, never lost.
                    logger.error(
                        "could not record an outbox outcome", ["event.id": event.eventID, "error": "\(error)"])
                }
            }
            return
        }
        // Handed messages were written delivered: nothing to record for them.
        handoff?.settled(events)
        let claimed = events.filter { $0.handedIn == nil }
        guard !claimed.isEmpty else { return }
        do {
            try await delivered.delivered(claimed) {
                slotFreed = true
                answered()
            }
        } catch {
            // The leases run out and other attempts follow: at least once, never lost.
            logger.error(
                "could not record an outbox outcome",
                ["event.id": first.eventID, "events": String(events.count), "error": "\(error)"])
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
