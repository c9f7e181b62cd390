import Foundation
public import ReceiptCore

extension GooglePlayProvider {
    /// After the record commits, the outbox acknowledges the purchase (Google refunds purchases
    /// left unacknowledged for three days), or consumes it for clients with `google_play.consume`
    /// on. Nothing is queued for a purchase Google already has in that state, or with
    /// `google_play.acknowledge` off.
    public func acknowledgement(for purchase: VerifiedPurchase, client: ClientInfo) -> StoreAcknowledgement? {
        let attributes = purchase.storeAttributes
        guard purchase.store == store, let token = attributes["purchase_token"],
            let package = attributes["package_name"],
            let productID = purchase.productID, let type = attributes["product_type"]
        else { return nil }
        let action: String
        if type == "product", client.setting(Setting.consume) == "on", attributes["consumed"] != "true" {
            action = "consume"
        } else if client.setting(Setting.acknowledge) != "off", attributes["acknowledged"] != "true" {
            action = "acknowledge"
        } else {
            return nil
        }
        return StoreAcknowledgement(
            store: store, clientID: client.clientID,
            parameters: [
                "action": action, "product_type": type, "package_name": package, "product_id": productID,
                "purchase_token": token,
            ])
    }

    /// Sends it with the client's own key (or the service's). Any error makes the outbox try again later.
    public func acknowledge(_ acknowledgement: StoreAcknowledgement, credentials: [String: String]) async throws {
        let parameters = acknowledgement.parameters
        guard let package = parameters["package_name"], let productID = parameters["product_id"],
            let token = parameters["purchase_token"]
        else {
            throw StoreVerificationError(
                code: .invalidField, reason: "ACKNOWLEDGEMENT_INCOMPLETE",
                message: "the acknowledgement lacks its purchase")
        }
        do {
            let key = try serviceAccountKey(credentials)
            switch (parameters["action"], parameters["product_type"]) {
            case ("consume"?, "product"?):
                try await api.consumeProduct(package: package, productID: productID, token: token, key: key)
            case (_, "subscription"?):
                try await api.acknowledgeSubscription(
                    package: package, subscriptionID: productID, token: token, key: key)
            default:
                try await api.acknowledgeProduct(package: package, productID: productID, token: token, key: key)
            }
        } catch let error as StoreAPIError {
            if error.kind == .credentialsRefused || error.kind == .notConfigured {
                logger.error(
                    "Google Play refused an acknowledgement; the operator must fix the service account",
                    ["client.id": acknowledgement.clientID, "package": package, "problem": error.message])
            }
            throw error.verificationError
        }
    }
}
