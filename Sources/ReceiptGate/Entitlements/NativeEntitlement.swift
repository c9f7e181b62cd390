import Foundation
import JSON
import ReceiptCore

/// An entitlement in the native API's wire shape (also the `entitlement.*` webhooks'): every
/// field always present, null when unknown; `expires_date_ms` null for a lifetime grant.
struct NativeEntitlement: Encodable, Sendable {
    let grant: EntitlementGrant
    /// When `in_grace_period` is judged.
    let now: Date

    init(_ grant: EntitlementGrant, now: Date) {
        self.grant = grant
        self.now = now
    }

    var inGracePeriod: Bool {
        EntitlementRules.inGracePeriod(expires: grant.expiresDate, grace: grant.gracePeriodExpiresDate, at: now)
    }

    enum CodingKeys: String, CodingKey {
        case entitlement, environment, expiresDateMs = "expires_date_ms", gracePeriodExpiresDateMs =
            "grace_period_expires_date_ms"
        case inGracePeriod = "in_grace_period", originalTransactionID = "original_transaction_id", ownership,
            productID = "product_id"
        case purchaseDateMs = "purchase_date_ms", store, transactionID = "transaction_id", willRenew = "will_renew"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(grant.entitlement, forKey: .entitlement)
        try container.encode(grant.environment.rawValue, forKey: .environment)
        try container.encode(grant.expiresDate?.epochMilliseconds, forKey: .expiresDateMs)
        try container.encode(grant.gracePeriodExpiresDate?.epochMilliseconds, forKey: .gracePeriodExpiresDateMs)
        try container.encode(inGracePeriod, forKey: .inGracePeriod)
        try container.encode(grant.originalTransactionID, forKey: .originalTransactionID)
        try container.encode(grant.ownership?.rawValue ?? Ownership.purchased.rawValue, forKey: .ownership)
        try container.encode(grant.productID, forKey: .productID)
        try container.encode(grant.purchaseDate?.epochMilliseconds, forKey: .purchaseDateMs)
        try container.encode(grant.store.rawValue, forKey: .store)
        try container.encode(grant.transactionID, forKey: .transactionID)
        try container.encode(grant.willRenew, forKey: .willRenew)
    }

    /// What `encode(to:)` writes under JSONEncoder with sorted keys, written by hand for the read
    /// path (the service's most frequent call).
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("entitlement"); writer.string(grant.entitlement)
        writer.key("environment"); writer.string(grant.environment.rawValue)
        writer.key("expires_date_ms"); writer.number(grant.expiresDate?.epochMilliseconds)
        writer.key("grace_period_expires_date_ms"); writer.number(grant.gracePeriodExpiresDate?.epochMilliseconds)
        writer.key("in_grace_period"); writer.bool(inGracePeriod)
        writer.key("original_transaction_id"); writer.string(grant.originalTransactionID)
        writer.key("ownership"); writer.string(grant.ownership?.rawValue ?? Ownership.purchased.rawValue)
        writer.key("product_id"); writer.string(grant.productID)
        writer.key("purchase_date_ms"); writer.number(grant.purchaseDate?.epochMilliseconds)
        writer.key("store"); writer.string(grant.store.rawValue)
        writer.key("transaction_id"); writer.string(grant.transactionID)
        writer.key("will_renew")
        if let willRenew = grant.willRenew { writer.bool(willRenew) } else { writer.null() }
        writer.endObject()
    }
}

/// What a player owns: the read's answer.
struct PlayerEntitlements: Encodable, Sendable {
    let playerID: String
    let entitlements: [NativeEntitlement]
    enum CodingKeys: String, CodingKey { case entitlements, playerID = "player_id" }

    func encoded() -> Data {
        var writer = JSONWriter(capacity: 128 + entitlements.count * 420)
        writer.beginObject()
        writer.key("entitlements")
        writer.beginArray()
        for entitlement in entitlements { entitlement.write(to: &writer) }
        writer.endArray()
        writer.key("player_id"); writer.string(playerID)
        writer.endObject()
        return writer.data
    }
}

/// An `entitlement.*` webhook's data: whose entitlement moved, and the grant (as it was, for one
/// revoked or expired).
struct EntitlementNews: Encodable {
    let grant: EntitlementGrant
    /// When the change was decided: whether the grant is in its grace period is as of then.
    let at: Date
    enum CodingKeys: String, CodingKey { case entitlement, playerID = "player_id" }
    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(grant.playerID, forKey: .playerID)
        try container.encode(NativeEntitlement(grant, now: at), forKey: .entitlement)
    }
}
