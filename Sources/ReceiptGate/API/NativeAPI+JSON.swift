import Foundation
import JSON
import ReceiptCore

// /v1/verify's body and answer on every request, read and written by hand (JSONReader,
// JSONWriter) instead of JSONDecoder and JSONEncoder. The body has no other decoder (the tests
// check it against JSONSerialization: VerifyBodyAgainstJSONSerialization); the answer's Encodable
// conformance stays, as the reference of VerifyAnswerAgainstJSONEncoder and for webhooks and reads.

extension NativeAPI.VerifyBody {
    private static let withoutEvidenceFields = NativeAPI.EvidenceFieldReading(stores: [])

    /// What `JSONBody.decode(_:from:)` would give for a Decodable of these fields, refusals and
    /// messages included; the store's declared evidence fields are read in the same pass, their
    /// refusal kept for after the body's own checks.
    static func decode(
        _ body: Data, evidence: NativeAPI.EvidenceFieldReading = withoutEvidenceFields
    ) -> Result<Self, JSONBody.Problem> {
        JSONBody.decode(from: body, fields: evidence.names) { fields throws(JSONBody.Problem) in
            // Read in CodingKeys' order (package_name first), the order a synthesized init(from:)
            // reads them in, so the first field that fails is the one JSONDecoder would name.
            let packageName = try fields.string(CodingKeys.packageName)
            let store = try fields.requiredString(CodingKeys.store),
                receipt = try fields.requiredString(CodingKeys.receipt)
            let productID = try fields.string(CodingKeys.productID),
                appAccountToken = try fields.string(CodingKeys.appAccountToken)
            let playerID = try fields.string(CodingKeys.playerID),
                characterID = try fields.string(CodingKeys.characterID)
            let serverID = try fields.string(CodingKeys.serverID),
                gameVersion = try fields.string(CodingKeys.gameVersion)
            let restore = try fields.bool(CodingKeys.restore)
            return Self(
                store: store, receipt: receipt, productID: productID, appAccountToken: appAccountToken,
                playerID: playerID,
                characterID: characterID, serverID: serverID, gameVersion: gameVersion, restore: restore,
                packageName: packageName,
                evidenceFields: evidence.read(fields, store: store))
        }
    }
}

extension NativeAPI.VerifyResponse {
    /// The bytes `RouteResponse.json(self)` writes (JSONEncoder, sorted keys, unescaped slashes).
    func encoded() -> Data {
        var writer = JSONWriter(capacity: 768)
        writer.beginObject()
        writer.key("duplicate"); writer.bool(duplicate)
        writer.key("first_claimed_by")
        if let firstClaimedBy { NativeClaimant(claimant: firstClaimedBy).write(to: &writer) } else { writer.null() }
        writer.key("first_verified_at"); writer.string(firstVerifiedAt)
        writer.key("status"); writer.string(status)
        writer.key("transaction"); transaction.write(to: &writer)
        writer.endObject()
        return writer.data
    }
}

extension NativeTransaction {
    /// What `encode(to:)` writes under JSONEncoder with sorted keys: every key, in UTF-8 order.
    func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("account_match"); writer.string(accountMatch.rawValue)
        writer.key("app_account_token"); writer.string(record.accountToken)
        writer.key("app_transaction_id"); writer.string(record.appTransactionID)
        writer.key("claim")
        if let claim { claim.write(to: &writer) } else { writer.null() }
        writer.key("commitment")
        if let commitment = record.commitment { commitment.write(to: &writer) } else { writer.null() }
        writer.key("currency"); writer.string(record.currency)
        writer.key("environment"); writer.string(record.environment.rawValue)
        writer.key("expires_date_ms"); writer.number(record.expiresDate?.epochMilliseconds)
        writer.key("id"); writer.number(record.managementID)
        writer.key("items")
        writer.beginArray()
        for item in record.items { item.write(to: &writer) }
        writer.endArray()
        writer.key("offer")
        if let offer = record.offer { offer.write(to: &writer) } else { writer.null() }
        writer.key("order_id"); writer.string(record.orderID)
        writer.key("original_transaction_id"); writer.string(record.originalTransactionID)
        writer.key("ownership"); writer.string(record.ownership?.rawValue)
        writer.key("price_milliunits"); writer.number(record.priceMilliunits)
        writer.key("product_id"); writer.string(record.productID)
        writer.key("purchase_date_ms"); writer.number(record.purchaseDate?.epochMilliseconds)
        writer.key("purchase_option_id"); writer.string(record.purchaseOptionID)
        writer.key("quantity"); writer.number(record.quantity)
        writer.key("refund")
        if let refund { refund.write(to: &writer) } else { writer.null() }
        writer.key("revocation_date_ms"); writer.number(record.revocationDate?.epochMilliseconds)
        writer.key("revocation_reason"); writer.string(record.revocationReason)
        writer.key("state"); writer.string(record.state.rawValue)
        writer.key("store"); writer.string(record.store.rawValue)
        writer.key("storefront"); writer.string(record.storefront)
        writer.key("transaction_id"); writer.string(record.transactionID)
        writer.key("type"); writer.string(record.kind?.rawValue)
        writer.endObject()
    }
}
