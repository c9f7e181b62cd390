import Foundation
import JSON
import ReceiptCore

/// Whom a claim was made for, in the native wire shape: every key always present.
struct NativeClaimant: Encodable, Sendable {
    let claimant: Claimant
    /// When the claim was made; only a recorded first claim has one.
    var claimedAt: Date? = nil

    enum CodingKeys: String, CodingKey {
        case playerID = "player_id", characterID = "character_id", serverID = "server_id", gameVersion = "game_version",
            claimedAtMs = "claimed_at_ms"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let claimedAt { try container.encode(claimedAt.epochMilliseconds, forKey: .claimedAtMs) }
        try container.encode(claimant.characterID, forKey: .characterID)
        try container.encode(claimant.gameVersion, forKey: .gameVersion)
        try container.encode(claimant.playerID, forKey: .playerID)
        try container.encode(claimant.serverID, forKey: .serverID)
    }

    /// What `encode(to:)` writes under JSONEncoder with sorted keys.
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("character_id"); writer.string(claimant.characterID)
        if let claimedAt { writer.key("claimed_at_ms"); writer.number(claimedAt.epochMilliseconds) }
        writer.key("game_version"); writer.string(claimant.gameVersion)
        writer.key("player_id"); writer.string(claimant.playerID)
        writer.key("server_id"); writer.string(claimant.serverID)
        writer.endObject()
    }
}

/// A refund in the native wire shape: full or partial, with what the store said of it.
struct NativeRefund: Encodable, Sendable {
    let detail: RefundDetail
    let purchasedQuantity: Int?

    enum CodingKeys: String, CodingKey {
        case kind, percentageMilliunits = "percentage_milliunits", quantity, storeType = "store_type"
    }

    var kind: String { detail.isPartial(ofQuantity: purchasedQuantity) ? "partial" : "full" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(detail.percentageMilliunits, forKey: .percentageMilliunits)
        try container.encode(detail.quantity, forKey: .quantity)
        try container.encode(detail.storeType, forKey: .storeType)
    }

    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("kind"); writer.string(kind)
        writer.key("percentage_milliunits"); writer.number(detail.percentageMilliunits)
        writer.key("quantity"); writer.number(detail.quantity)
        writer.key("store_type"); writer.string(detail.storeType)
        writer.endObject()
    }
}

/// The `transaction.claim_conflict` event: a purchase first claimed for one player of the game,
/// presented again for another (a shared or resold receipt).
struct ClaimConflict: Encodable {
    let transaction: NativeTransaction
    let firstClaimedBy: Claimant
    let claimedBy: Claimant

    enum CodingKeys: String, CodingKey {
        case transaction, firstClaimedBy = "first_claimed_by", claimedBy = "claimed_by"
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transaction, forKey: .transaction)
        try container.encode(
            NativeClaimant(claimant: firstClaimedBy, claimedAt: transaction.record.claim?.claimedAt),
            forKey: .firstClaimedBy)
        try container.encode(NativeClaimant(claimant: claimedBy), forKey: .claimedBy)
    }
}

/// The `transaction.refunded` and `transaction.revoked` events: the transaction and how much of it the store gave back.
struct RefundNews: Encodable {
    let transaction: NativeTransaction
    var refund: NativeRefund? {
        transaction.record.refund.map { NativeRefund(detail: $0, purchasedQuantity: transaction.record.quantity) }
    }

    enum CodingKeys: String, CodingKey { case transaction, refund }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transaction, forKey: .transaction)
        try container.encode(refund, forKey: .refund)
    }
}

/// `transaction.disputed`: the transaction as it stands, and the dispute the store told of.
struct DisputeWebhook: Encodable {
    let transaction: NativeTransaction
    let dispute: DisputeNews
}

/// `transaction.items_refunded`: the purchase stands, and these of its items were refunded or
/// taken back (every such item, so a game that missed an earlier one learns it too).
struct ItemsRefundWebhook: Encodable {
    let transaction: NativeTransaction
    var refundedItems: [PurchaseItem] { transaction.record.items.filter(\.isRefunded) }

    enum CodingKeys: String, CodingKey { case transaction, refundedItems = "refunded_items" }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(transaction, forKey: .transaction)
        try container.encode(refundedItems, forKey: .refundedItems)
    }
}
