public import Foundation

/// The game's own names for whom a claim was made, as the claim sent them.
public struct Claimant: Sendable, Equatable {
    public var playerID: String?
    public var characterID: String?
    public var serverID: String?
    public var gameVersion: String?

    public init(
        playerID: String? = nil, characterID: String? = nil, serverID: String? = nil, gameVersion: String? = nil
    ) {
        self.playerID = playerID
        self.characterID = characterID
        self.serverID = serverID
        self.gameVersion = gameVersion
    }
}

/// The first claim of a purchase: a game asked to verify it (through any API) and was answered
/// as its first verification. A ledger row without one is *known* (a store told us) and not yet
/// delivered to anyone.
public struct Claim: Sendable, Equatable {
    public var claimant: Claimant
    public var claimedAt: Date

    public init(claimant: Claimant, claimedAt: Date) {
        self.claimant = claimant
        self.claimedAt = claimedAt
    }
}

/// What one claim of a purchase came to.
public enum ClaimOutcome: Sendable, Equatable {
    /// Nobody had claimed it: the first verification, owed its delivery, webhook and acknowledgement.
    case first
    /// Claimed before, by the same player or by a caller that names none.
    case repeated
    /// Claimed before for another player of the same game: still a duplicate, and the first
    /// signal of a shared receipt.
    case conflict(firstClaimedBy: Claimant)

    public var isFirst: Bool { self == .first }
}

extension LedgerRules {
    /// How a claim by `claimant` stands against the purchase's recorded first claim (nil: known only)
    /// and, for one period of a subscription, against the subscription's `owner`: the first claim
    /// naming a player of any of its periods. Every period belongs to that owner, so a period
    /// claimed for another player is a conflict (never a first claim, never delivered to them),
    /// and the owner's claim of a period someone else had claimed is a plain repeat. A conflict
    /// needs both player ids: a claim that names no player cannot contradict one.
    public static func claim(of recorded: Claim?, owner: Claim? = nil, by claimant: Claimant) -> ClaimOutcome {
        if let decider = owner ?? recorded, let first = decider.claimant.playerID, let now = claimant.playerID,
            !samePlayer(first, now)
        {
            return .conflict(firstClaimedBy: decider.claimant)
        }
        return recorded == nil ? .first : .repeated
    }

    /// Whether `purchase` is one period of a subscription, whose periods share its owner: a
    /// subscription by kind, or any purchase that expires (some stores' receipts carry an expiry and
    /// no kind; a prepaid plan is topped up under the subscription's original id).
    public static func isSubscriptionPeriod(_ purchase: VerifiedPurchase) -> Bool {
        purchase.kind == .autoRenewableSubscription || purchase.kind == .nonRenewingSubscription
            || purchase.expiresDate != nil
    }

    /// Whether `claimant` may take a period of a subscription that `owner` claimed first: its owner
    /// only (anyone while it has none). A claim that names no player cannot show it is the owner's,
    /// so it takes nothing, and the owner's own claim of that period is still theirs.
    public static func mayTakePeriod(ownedBy owner: Claim?, by claimant: Claimant) -> Bool {
        guard let owner, let first = owner.claimant.playerID else { return true }
        guard let now = claimant.playerID else { return false }
        return samePlayer(first, now)
    }

    /// Player ids are the game's bytes: equal when their UTF-8 is, as Postgres compares them. Swift's
    /// `==` would call a precomposed "é" and "e" with a combining accent one player, while the
    /// ledger's rows, its indexes and the entitlement index count two.
    public static func samePlayer(_ one: String, _ other: String) -> Bool { one.utf8.elementsEqual(other.utf8) }

    /// `players` once each by their bytes (`samePlayer`), in byte order.
    public static func distinctPlayers(_ players: [String]) -> [String] {
        var seen = Set<[UInt8]>()
        return players.map { Array($0.utf8) }.filter { seen.insert($0).inserted }.sorted {
            $0.lexicographicallyPrecedes($1)
        }
        .map { String(decoding: $0, as: UTF8.self) }
    }
}

/// How much of a purchase a store refunded or revoked, as far as the store says. Kept with the
/// transaction; unknown values stay as the store wrote them (`storeType`).
public struct RefundDetail: Sendable, Equatable {
    /// The store's own name for the kind of refund (a revocation type, a refund type number), raw.
    public var storeType: String?
    /// The store said the refund is partial (a prorated refund, a quantity-based void).
    public var storeSaysPartial: Bool?
    /// The share refunded in milliunits of a percent (50_000 is 50 %), when the store says.
    public var percentageMilliunits: Int?
    /// How many of the purchased quantity were refunded, when the store says.
    public var quantity: Int?

    public init(
        storeType: String? = nil, storeSaysPartial: Bool? = nil, percentageMilliunits: Int? = nil, quantity: Int? = nil
    ) {
        self.storeType = storeType
        self.storeSaysPartial = storeSaysPartial
        self.percentageMilliunits = percentageMilliunits
        self.quantity = quantity
    }

    /// Partial when the store says so, or the percentage is under 100 %, or fewer than the
    /// purchased quantity were refunded; full otherwise.
    public func isPartial(ofQuantity purchased: Int?) -> Bool {
        if storeSaysPartial == true { return true }
        if let percentageMilliunits, percentageMilliunits < 100_000 { return true }
        if let quantity, let purchased, quantity < purchased { return true }
        return false
    }
}
