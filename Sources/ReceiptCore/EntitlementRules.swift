public import Foundation

/// What a player owns, written once: which purchases may grant an entitlement, which subscription
/// states give access, which of several purchases granting one entitlement is shown, and which
/// event a change of the set is. The ledger's index statement binds these (it does not restate
/// them), and the change events are classified here from the rows the statement returns.
public enum EntitlementRules {
    /// A consumable is used up: it never grants an entitlement, whatever the catalog maps.
    public static func mayGrant(_ kind: ProductKind?) -> Bool { kind != .consumable }

    /// The kind of a one-time purchase from a store that does not say whether its product is
    /// consumable (where the app decides, by consuming the purchase or not). A purchase the
    /// store reports consumed, or one we consume for the client, was a consumable; any other is of
    /// unknown kind and may grant, as the store itself keeps an unconsumed purchase owned (it
    /// cannot be bought again until it is consumed).
    public static func oneTimeKind(consumed: Bool, consumedForClient: Bool) -> ProductKind? {
        consumed || consumedForClient ? .consumable : nil
    }

    /// A catalog entry names a product (`gamepass`) or a product with one of its purchase options
    /// (`gamepass:rent-7d`, where the store sells one product several ways: to buy, to rent, to
    /// pre-order): a purchase is granted by either entry.
    public struct CatalogEntry: Sendable, Equatable {
        public let productID: String
        public let purchaseOptionID: String?

        public init(_ entry: String) {
            if let colon = entry.firstIndex(of: ":") {
                productID = String(entry[..<colon])
                purchaseOptionID = String(entry[entry.index(after: colon)...])
            } else {
                productID = entry
                purchaseOptionID = nil
            }
        }
    }

    /// The product a catalog entry (a column) names, with or without its purchase option.
    package static func catalogProductSQL(entry: String) -> String {
        "split_part(\(entry), ':', 1)"
    }

    /// Whether catalog entry `entry` (a column) maps a purchase of `product` under `option`
    /// (columns), as an SQL predicate.
    package static func catalogMatchSQL(entry: String, product: String, option: String) -> String {
        "\(entry) IN (\(product), \(product) || ':' || \(option))"
    }

    /// The subscription states in which the subscriber has access (a billing retry without a grace
    /// period does not; a grace period does, until its end).
    public static let accessStatuses: [SubscriptionStatus] = [.active, .gracePeriod]

    /// Whether a grant whose period ends at `expires` (nil: never) with a grace end `grace` still
    /// holds at `now`.
    public static func holds(expires: Date?, grace: Date?, at now: Date) -> Bool {
        guard let expires else { return true }
        return max(expires, grace ?? expires) > now
    }

    /// `holds(expires:grace:)` as an SQL predicate over a row's columns `expires` and `grace`, at `now()`.
    package static func holdsSQL(expires: String, grace: String) -> String {
        "(\(expires) IS NULL OR GREATEST(\(expires), \(grace)) > now())"
    }

    /// Whether a subscription renews at the end of its period ending `periodEnd`: a commitment with
    /// payments left after it renews whatever auto-renew says meanwhile (the customer owes those
    /// payments; their auto-renew choice counts from the commitment's end); otherwise the store's
    /// word, nil while it has not said.
    public static func willRenew(autoRenew: Bool?, commitment: BillingCommitment?, periodEnd: Date?) -> Bool? {
        commitment?.renews(after: periodEnd) == true ? true : autoRenew
    }

    /// `willRenew` as an SQL expression over a subscription's `auto_renew` and period end
    /// `expires`, and its latest period's `commitment` column (`BillingCommitment`'s JSON).
    package static func willRenewSQL(autoRenew: String, commitment: String, expires: String) -> String {
        "(CASE WHEN (\(commitment) ->> 'expires_date_ms')::bigint > (extract(epoch FROM \(expires)) * 1000)::bigint"
            + " THEN true ELSE \(autoRenew) END)"
    }

    /// In the grace period: the period is over, the grace end is not.
    public static func inGracePeriod(expires: Date?, grace: Date?, at now: Date) -> Bool {
        guard let expires, let grace else { return false }
        return expires <= now && grace > now
    }

    /// The order in which several purchases granting the same entitlement are preferred, best
    /// first: a lifetime grant, then the latest end, then one bought over one shared by family,
    /// then the latest purchase. As SQL `ORDER BY` terms over a row with `expires_date`,
    /// `grace_period_expires_date`, `ownership`, `purchase_date` and `transaction_row_id`.
    package static let preferenceOrder = """
        (expires_date IS NULL) DESC, GREATEST(expires_date, grace_period_expires_date) DESC NULLS LAST,
        (ownership IS NOT DISTINCT FROM 'family_shared') ASC, purchase_date DESC NULLS LAST, transaction_row_id DESC
        """

    /// How an entitlement moved, for its webhook; nil when nothing a game acts on changed (auto-renew
    /// switched, another purchase now backing the same end, or an earlier one while it is still owned:
    /// the game learns the new end when it reads, and the expiry when it comes).
    public static func change(before: Grant?, after: Grant?, at now: Date) -> EntitlementChange? {
        switch (before, after) {
        case (nil, nil): return nil
        case (nil, .some): return .granted
        case (.some(let before), nil):
            return holds(expires: before.expires, grace: before.grace, at: now) ? .revoked : .expired
        case (.some(let before), .some(let after)):
            // A grant that had ended (the sweep not yet run) and is owned again is granted anew.
            guard holds(expires: before.expires, grace: before.grace, at: now) else { return .granted }
            guard let earlier = before.expires else { return nil }
            guard let later = after.expires else { return .renewed }
            return later > earlier ? .renewed : nil
        }
    }

    /// What the change rule reads of a grant.
    public struct Grant: Sendable, Equatable {
        public var expires: Date?
        public var grace: Date?
        public init(expires: Date?, grace: Date?) {
            self.expires = expires
            self.grace = grace
        }
    }
}

/// A change of what a player owns, each told by its own webhook (`entitlement.<rawValue>`).
public enum EntitlementChange: String, Sendable, CaseIterable {
    /// The player owns it now and did not before.
    case granted
    /// Still owned, now until later (a renewal, or a lifetime purchase).
    case renewed
    /// Taken away before its end: refunded, revoked, or no longer granted by the catalog.
    case revoked
    /// Its end (and any grace) passed.
    case expired
}
