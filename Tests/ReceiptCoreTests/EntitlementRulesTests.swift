import Foundation
import ReceiptCore
import Testing

/// What a game is told when what a player owns moves: each row a grant before and after a write
/// of the ledger, and the webhook the game receives (none when nothing it acts on changed).
@Suite struct EntitlementChangeRule {
    static let now = Date(timeIntervalSince1970: 1_780_000_000)
    static let day: TimeInterval = 86_400

    /// A grant ending `expires` seconds from now (nil: never), with a grace end `grace` seconds from now.
    static func grant(_ expires: TimeInterval?, grace: TimeInterval? = nil) -> EntitlementRules.Grant {
        .init(expires: expires.map { now.addingTimeInterval($0) }, grace: grace.map { now.addingTimeInterval($0) })
    }

    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        let before: EntitlementRules.Grant?
        let after: EntitlementRules.Grant?
        /// The webhook's type, nil for none.
        let told: String?
        var testDescription: String { name }
    }

    static let rows: [Row] = [
        Row(name: "nothing owned, nothing owned", before: nil, after: nil, told: nil),
        Row(name: "a subscription bought", before: nil, after: grant(30 * day), told: "entitlement.granted"),
        Row(name: "a non-consumable bought", before: nil, after: grant(nil), told: "entitlement.granted"),
        Row(
            name: "renewed to a later end", before: grant(10 * day), after: grant(40 * day), told: "entitlement.renewed"
        ),
        Row(
            name: "a lifetime purchase beside a subscription", before: grant(10 * day), after: grant(nil),
            told: "entitlement.renewed"),
        Row(
            name: "renewed while in its grace period", before: grant(-60, grace: 10 * day), after: grant(30 * day),
            told: "entitlement.renewed"),
        Row(
            name: "an earlier end (a downgrade, another purchase)", before: grant(40 * day), after: grant(10 * day),
            told: nil),
        Row(name: "the same end (auto-renew switched off)", before: grant(10 * day), after: grant(10 * day), told: nil),
        Row(
            name: "a lifetime grant now backed by a subscription too", before: grant(nil), after: grant(10 * day),
            told: nil),
        Row(
            name: "a lifetime grant backed by another lifetime purchase", before: grant(nil), after: grant(nil),
            told: nil),
        Row(name: "refunded before its end", before: grant(10 * day), after: nil, told: "entitlement.revoked"),
        Row(name: "a non-consumable refunded", before: grant(nil), after: nil, told: "entitlement.revoked"),
        Row(
            name: "taken away during its grace period", before: grant(-60, grace: 5 * day), after: nil,
            told: "entitlement.revoked"),
        Row(name: "removed after its end (the sweep)", before: grant(-60), after: nil, told: "entitlement.expired"),
        Row(
            name: "removed after its grace ended", before: grant(-2 * day, grace: -60), after: nil,
            told: "entitlement.expired"),
        Row(
            name: "ended, not yet swept, bought again", before: grant(-60), after: grant(30 * day),
            told: "entitlement.granted"),
        Row(
            name: "ended, not yet swept, a lifetime purchase", before: grant(-60), after: grant(nil),
            told: "entitlement.granted"),
    ]

    @Test(arguments: rows)
    func whatTheGameIsTold(_ row: Row) {
        let change = EntitlementRules.change(before: row.before, after: row.after, at: Self.now)
        #expect(change.map { "entitlement.\($0.rawValue)" } == row.told)
    }
}

/// Whether a grant still gives access, and whether a game is told it is in a grace period.
@Suite struct EntitlementAccessRule {
    static let now = EntitlementChangeRule.now

    @Test func aGrantHoldsUntilItsEndOrItsGraceEnd() {
        let at = { (offset: TimeInterval) in Self.now.addingTimeInterval(offset) }
        #expect(EntitlementRules.holds(expires: nil, grace: nil, at: Self.now), "a lifetime grant never ends")
        #expect(EntitlementRules.holds(expires: at(60), grace: nil, at: Self.now))
        #expect(!EntitlementRules.holds(expires: at(-60), grace: nil, at: Self.now))
        #expect(
            EntitlementRules.holds(expires: at(-60), grace: at(60), at: Self.now), "in its grace period: still owned")
        #expect(!EntitlementRules.holds(expires: at(-120), grace: at(-60), at: Self.now))
        #expect(
            EntitlementRules.holds(expires: at(60), grace: at(-60), at: Self.now),
            "a grace end before the period's end does not shorten it")
    }

    @Test func inGracePeriodOnlyOnceThePeriodEndedAndTheGraceHasNot() {
        let at = { (offset: TimeInterval) in Self.now.addingTimeInterval(offset) }
        #expect(EntitlementRules.inGracePeriod(expires: at(-60), grace: at(86_400), at: Self.now))
        #expect(
            !EntitlementRules.inGracePeriod(expires: at(60), grace: at(86_400), at: Self.now),
            "paid up: not in grace yet")
        #expect(!EntitlementRules.inGracePeriod(expires: at(-120), grace: at(-60), at: Self.now), "the grace is over")
        #expect(!EntitlementRules.inGracePeriod(expires: at(-60), grace: nil, at: Self.now))
        #expect(!EntitlementRules.inGracePeriod(expires: nil, grace: nil, at: Self.now))
    }

    @Test func onlySubscriptionsActiveOrInGraceGiveAccess() {
        #expect(Set(EntitlementRules.accessStatuses) == [.active, .gracePeriod])
    }
}

/// Which purchases may grant an entitlement at all: never a consumable, whatever the catalog maps.
@Suite struct EntitlementGrantKindRule {
    @Test func aConsumableNeverGrants() {
        #expect(!EntitlementRules.mayGrant(.consumable))
        for kind in [ProductKind.nonConsumable, .autoRenewableSubscription, .nonRenewingSubscription] {
            #expect(EntitlementRules.mayGrant(kind), "\(kind)")
        }
        #expect(EntitlementRules.mayGrant(nil), "a one-time purchase of unknown kind is owned until it is consumed")
    }

    @Test func aConsumedOneTimePurchaseIsAConsumable() {
        #expect(EntitlementRules.oneTimeKind(consumed: true, consumedForClient: false) == .consumable)
        #expect(EntitlementRules.oneTimeKind(consumed: false, consumedForClient: true) == .consumable)
        #expect(EntitlementRules.oneTimeKind(consumed: false, consumedForClient: false) == nil)
        #expect(!EntitlementRules.mayGrant(EntitlementRules.oneTimeKind(consumed: true, consumedForClient: false)))
    }
}
