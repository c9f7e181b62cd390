public import ReceiptCore

// This plugin's part of the OpenAPI document the service serves at /openapi.yaml. Steam has no
// route of its own: its orders start at the core's POST /v1/orders and finish at /v1/verify.
extension SteamProvider {
    public static let openAPIPart = OpenAPIPart(
        sharedFieldNotes: [
            "receipt": "the order id POST /v1/orders answered; the verification finalizes the order with Steam "
                + "(FinalizeTxn, then QueryTxn) and records the item `product_id` names, else its first.",
            "product_id": "the Steam item id (itemid) of one line of the order; each line is verified once.",
        ])
}
