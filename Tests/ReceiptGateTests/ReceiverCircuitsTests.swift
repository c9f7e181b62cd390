import Foundation
import TestSupport
import Testing

@testable import ReceiptGate

/// A receiver that keeps failing is opened: its messages are parked, one probe goes each interval
/// (on the injected clock), and the first success closes it and releases what waited.
@Suite struct ReceiverCircuitsRules {
    static let receiver = ReceiverCircuits.Receiver(clientID: "rgc_a", target: "webhook")

    @Test func failuresInARowOpenAReceiverAndOneProbeAnIntervalClosesIt() {
        let clock = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
        let circuits = ReceiverCircuits(threshold: 3, probeInterval: 30, parkFor: 3600, now: { clock.get() })
        #expect(circuits.decide(Self.receiver) == .send)
        #expect(circuits.record(Self.receiver, succeeded: false) == nil)
        #expect(circuits.record(Self.receiver, succeeded: false) == nil)
        #expect(
            circuits.record(Self.receiver, succeeded: false) == .parkAll(seconds: 3600),
            "the third failure in a row opens it")
        #expect(circuits.decide(Self.receiver) == .park(seconds: 3600), "open: not sent")
        #expect(circuits.probesDue().isEmpty, "no probe before its interval")

        clock.update { $0 = $0.addingTimeInterval(30) }
        #expect(circuits.probesDue() == [Self.receiver], "a parked message is made due for the probe")
        #expect(circuits.probesDue().isEmpty, "asked for once an interval")
        #expect(circuits.decide(Self.receiver) == .send, "the probe goes")
        #expect(circuits.decide(Self.receiver) == .park(seconds: 3600), "one probe at a time")
        #expect(circuits.record(Self.receiver, succeeded: false) == nil, "a failed probe keeps it open")
        #expect(circuits.decide(Self.receiver) == .park(seconds: 3600))

        clock.update { $0 = $0.addingTimeInterval(30) }
        #expect(circuits.decide(Self.receiver) == .send)
        #expect(circuits.record(Self.receiver, succeeded: true) == .release, "answered: what waited is due now")
        #expect(circuits.decide(Self.receiver) == .send, "closed")
        #expect(circuits.openReceivers == 0)
    }

    @Test func aSuccessBetweenFailuresKeepsItClosedAndOthersAreApart() {
        let circuits = ReceiverCircuits(threshold: 2, probeInterval: 30, parkFor: 60)
        let other = ReceiverCircuits.Receiver(clientID: "rgc_b", target: "webhook")
        _ = circuits.record(Self.receiver, succeeded: false)
        #expect(
            circuits.record(Self.receiver, succeeded: true) == .release,
            "a failure behind it: what waits for it is due now")
        #expect(circuits.record(Self.receiver, succeeded: false) == nil, "the count starts again")
        #expect(circuits.record(other, succeeded: false) == nil)
        #expect(circuits.record(other, succeeded: false) == .parkAll(seconds: 60))
        #expect(circuits.decide(Self.receiver) == .send, "another client's receiver is not this one")
        #expect(circuits.record(Self.receiver, succeeded: true) == .release)
    }

    /// What the worker must bring in line in the database is named as the circuit stands when it
    /// asks, whatever order the changes came in: a receiver that opened and closed again before
    /// the worker got to it is released, not parked; and what the writers see open is the same.
    @Test func whatIsSettledIsTheCircuitAsItStandsNow() {
        let circuits = ReceiverCircuits(threshold: 2, probeInterval: 30, parkFor: 60)
        #expect(circuits.takeUnsettled().isEmpty)
        circuits.record(Self.receiver, succeeded: false)
        circuits.record(Self.receiver, succeeded: false)
        #expect(circuits.parked() == [Self.receiver: 60], "open: new messages are written parked")
        #expect(circuits.record(Self.receiver, succeeded: true) == .release, "a send begun before it opened answers")
        #expect(circuits.parked().isEmpty)
        let settled = circuits.takeUnsettled()
        #expect(settled.count == 1 && settled[0].receiver == Self.receiver && settled[0].parkFor == nil, "released")
        #expect(circuits.takeUnsettled().isEmpty, "named once")

        circuits.record(Self.receiver, succeeded: false)
        circuits.record(Self.receiver, succeeded: false)
        let parked = circuits.takeUnsettled()
        #expect(parked.count == 1 && parked[0].parkFor == 60, "parked")
        circuits.markUnsettled(Self.receiver)  // parking it failed: named again, as it stands
        circuits.record(Self.receiver, succeeded: true)
        let released = circuits.takeUnsettled()
        #expect(released.count == 1 && released[0].parkFor == nil, "closed meanwhile: released")
    }

    /// A probe that never reached its receiver (its client could not be read) counts for nothing,
    /// and another probe goes an interval later: the receiver is not left open with no probe.
    @Test func aProbeThatNeverReachedItsReceiverIsFollowedByAnother() {
        let clock = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
        let circuits = ReceiverCircuits(threshold: 1, probeInterval: 30, parkFor: 3600, now: { clock.get() })
        circuits.record(Self.receiver, succeeded: false)
        clock.update { $0 += 31 }
        #expect(circuits.probesDue() == [Self.receiver])
        #expect(circuits.decide(Self.receiver) == .send, "the probe goes")
        circuits.unanswered(Self.receiver)
        #expect(circuits.isOpen(Self.receiver), "nothing learned: still open")
        #expect(circuits.decide(Self.receiver) == .park(seconds: 3600), "no probe before the next interval")
        clock.update { $0 += 31 }
        #expect(circuits.probesDue() == [Self.receiver], "asked for again")
        #expect(circuits.decide(Self.receiver) == .send, "and it goes")
    }

    /// A writer that wrote messages parked for a receiver that closed before its commit has the
    /// receiver's release run again: the release of the close may have missed those rows.
    @Test func messagesWrittenParkedAfterACloseAreReleasedAgain() {
        let circuits = ReceiverCircuits(threshold: 1, probeInterval: 30, parkFor: 60)
        let handoff = OutboxHandoff(capacity: 4, leaseSeconds: 60, circuits: circuits)
        circuits.record(Self.receiver, succeeded: false)
        #expect(handoff.openReceivers() == [Self.receiver: 60], "a writer sees it open")
        _ = circuits.takeUnsettled()
        handoff.wroteParked(for: [Self.receiver])
        #expect(circuits.takeUnsettled().isEmpty, "still open: nothing to release")
        circuits.record(Self.receiver, succeeded: true)
        _ = circuits.takeUnsettled()  // the close's release ran, before the writer committed
        handoff.wroteParked(for: [Self.receiver])
        let again = circuits.takeUnsettled()
        #expect(again.count == 1 && again[0].parkFor == nil, "released again")
    }
}
