import Foundation
import Synchronization

/// Which receivers (a client's webhook, delivery or refund-callback URL) are tried now. A receiver
/// that failed `threshold` times in a row is *open*: its messages are not sent but parked (no
/// attempt spent, no sender's slot held for a timeout), and one message at a time probes it every
/// `probeInterval`. The first success closes it and releases what waited, so a backlog drains as
/// soon as the receiver answers again instead of at each message's own back-off. A pure rule over
/// an injected clock, and the one place that says whether a receiver is open: the worker parks
/// and releases what the database holds for a receiver as its circuit stands (`takeUnsettled`),
/// and the handoff writes a new message for an open one parked (`parked`).
final class ReceiverCircuits: Sendable {
    struct Receiver: Hashable, Sendable {
        let clientID: String, target: String
    }

    enum Decision: Equatable, Sendable {
        /// Send it (the receiver is closed, or this is its probe).
        case send
        /// Do not send it now: due again in this many seconds.
        case park(seconds: Double)
    }

    enum Action: Equatable, Sendable {
        /// The receiver answered after failures: what waits for it is due now.
        case release
        /// The receiver just opened: what is due for it waits this many seconds (until a probe closes it).
        case parkAll(seconds: Double)
    }

    private struct State {
        var failures = 0
        /// Open: when the next probe may go.
        var nextProbe: Date?
        var probing = false
        /// When a parked message was last made due to serve as the probe.
        var probeAskedAt: Date?
    }

    let threshold: Int
    let probeInterval: TimeInterval
    /// How long a parked message waits when no probe releases it sooner (a process that stops
    /// while a receiver is open leaves its messages due at most this late).
    let parkFor: TimeInterval
    private let now: @Sendable () -> Date
    private let states = Mutex<[Receiver: State]>([:])
    /// Receivers whose messages in the database are not yet parked or released as their circuit
    /// now stands: it opened or closed since, or bringing them in line failed.
    private let unsettled = Mutex<Set<Receiver>>([])
    /// When each receiver's waiting messages were last released for a success of a message that had
    /// failed before (maybe in another process): once a probe interval at most.
    private let released = Mutex<[Receiver: Date]>([:])

    init(
        threshold: Int, probeInterval: TimeInterval, parkFor: TimeInterval,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.threshold = max(1, threshold)
        self.probeInterval = probeInterval
        self.parkFor = max(parkFor, probeInterval)
        self.now = now
    }

    /// The circuits of an outbox worker configured so.
    convenience init(_ configuration: OutboxWorker.Configuration, now: @escaping @Sendable () -> Date) {
        self.init(
            threshold: configuration.circuitThreshold, probeInterval: OutboxWorker.seconds(configuration.probeInterval),
            parkFor: OutboxWorker.seconds(configuration.maxDelay), now: now)
    }

    /// Whether a message claimed for `receiver` is sent.
    func decide(_ receiver: Receiver) -> Decision {
        let moment = now()
        return states.withLock { states in
            guard var state = states[receiver], let nextProbe = state.nextProbe else { return .send }
            guard !state.probing, moment >= nextProbe else { return .park(seconds: parkFor) }
            state.probing = true
            states[receiver] = state
            return .send
        }
    }

    /// What a send to `receiver` came to; what must be done about the receiver's other messages,
    /// which `takeUnsettled` names from now on. `failedBefore`: the message had failed before, here
    /// or in another process, whose parked or backed-off messages a success here releases too.
    @discardableResult
    func record(_ receiver: Receiver, succeeded: Bool, failedBefore: Bool = false) -> Action? {
        let action = transition(receiver, succeeded: succeeded, failedBefore: failedBefore)
        if action != nil { markUnsettled(receiver) }
        return action
    }

    private func transition(_ receiver: Receiver, succeeded: Bool, failedBefore: Bool) -> Action? {
        let moment = now()
        let action: Action? = states.withLock { states in
            var state = states[receiver] ?? State()
            if succeeded {
                states[receiver] = nil
                return state.failures > 0 ? .release : nil
            }
            state.failures += 1
            defer { states[receiver] = state }
            if state.nextProbe != nil {
                state.probing = false
                state.nextProbe = moment.addingTimeInterval(probeInterval)
                return nil
            }
            guard state.failures >= threshold else { return nil }
            state.nextProbe = moment.addingTimeInterval(probeInterval)
            return .parkAll(seconds: parkFor)
        }
        guard succeeded else { return action }
        return released.withLock { released in
            guard action == .release || failedBefore else { return nil }
            if action != .release, let last = released[receiver], moment.timeIntervalSince(last) < probeInterval {
                return nil
            }
            released[receiver] = moment
            if released.count > 10_000 {
                released = released.filter { moment.timeIntervalSince($0.value) < probeInterval }
            }
            return .release
        }
    }

    /// A send to `receiver` never reached it (its client could not be read): says nothing about
    /// the receiver, but if it was the probe, another goes a probe interval later.
    func unanswered(_ receiver: Receiver) {
        let moment = now()
        states.withLock { states in
            guard var state = states[receiver], state.probing else { return }
            state.probing = false
            state.nextProbe = moment.addingTimeInterval(probeInterval)
            states[receiver] = state
        }
    }

    /// Whether `receiver` is open now (its messages are parked, not sent).
    func isOpen(_ receiver: Receiver) -> Bool { states.withLock { $0[receiver]?.nextProbe != nil } }

    /// Open receivers, each with how long what is due for it is parked.
    func parked() -> [Receiver: Double] {
        states.withLock { states in
            var open: [Receiver: Double] = [:]
            for (receiver, state) in states where state.nextProbe != nil { open[receiver] = parkFor }
            return open
        }
    }

    /// `receiver`'s messages in the database must be brought in line with its circuit again.
    func markUnsettled(_ receiver: Receiver) {
        _ = unsettled.withLock { $0.insert(receiver) }
    }

    /// Receivers to bring in line, each as its circuit stands now: parked for this many seconds
    /// (open), or nil (closed: what waits is due now). Each is named once for everything that
    /// happened to it before the call; a change after it names it again, so whoever applies these
    /// one call at a time leaves the database as the circuit last stood, whatever order the
    /// changes raced in.
    func takeUnsettled() -> [(receiver: Receiver, parkFor: Double?)] {
        let taken = unsettled.withLock { unsettled in
            defer { unsettled.removeAll() }
            return unsettled
        }
        guard !taken.isEmpty else { return [] }
        return states.withLock { states in
            taken.map { ($0, states[$0]?.nextProbe != nil ? parkFor : nil) }
        }
    }

    /// Open receivers whose probe is due and none is under way nor asked for within a probe
    /// interval: each needs one parked message made due, which the next claim brings as its probe.
    func probesDue() -> [Receiver] {
        let moment = now()
        return states.withLock { states in
            var due: [Receiver] = []
            for (receiver, var state) in states where !state.probing {
                guard let nextProbe = state.nextProbe, moment >= nextProbe else { continue }
                if let asked = state.probeAskedAt, moment.timeIntervalSince(asked) < probeInterval { continue }
                state.probeAskedAt = moment
                states[receiver] = state
                due.append(receiver)
            }
            return due
        }
    }

    var openReceivers: Int { states.withLock { $0.values.filter { $0.nextProbe != nil }.count } }
}
