import Foundation
public import ReceiptCore

extension HuaweiAppGalleryProvider {
    /// After the first claim commits, the outbox confirms a consumable with Huawei's order
    /// service (until then Huawei will not sell the product to the player again). Nothing is
    /// queued for other kinds, or for a consumable Huawei already has confirmed or consumed.
    /// The app id travels with it (the outbox opens only the sealed settings); the secret does not.
    public func acknowledgement(for purchase: VerifiedPurchase, client: ClientInfo) -> StoreAcknowledgement? {
        let attributes = purchase.storeAttributes
        guard purchase.store == store, purchase.kind == .consumable, purchase.revocationDate == nil,
            let token = attributes["purchase_token"], let productID = purchase.productID,
            let appID = client.setting(Setting.appID),
            attributes["confirmed"] != "true", attributes["consumed"] != "true"
        else { return nil }
        return StoreAcknowledgement(
            store: store, clientID: client.clientID,
            parameters: [
                "action": "confirm", "app_id": appID, "product_id": productID, "purchase_token": token,
                "site": attributes["site"] ?? HuaweiSite.china.rawValue,
            ])
    }

    /// Sends it with the client's app secret. Huawei answering "already confirmed" is success;
    /// any other error makes the outbox try again later.
    public func acknowledge(_ acknowledgement: StoreAcknowledgement, credentials: [String: String]) async throws {
        let parameters = acknowledgement.parameters
        guard let appID = parameters["app_id"], let productID = parameters["product_id"],
            let token = parameters["purchase_token"]
        else {
            throw StoreVerificationError(
                code: .invalidField, reason: "ACKNOWLEDGEMENT_INCOMPLETE",
                message: "the confirmation lacks its purchase")
        }
        guard let secret = credentials[Setting.appSecret], !secret.isEmpty else {
            throw HuaweiAPIErrors.notConfigured("this client has no Huawei app secret (--huawei-app-secret)")
                .verificationError
        }
        let site = parameters["site"].flatMap(HuaweiSite.init(rawValue:)) ?? .china
        do {
            try await api.confirm(token, productID: productID, site: site, app: .init(id: appID, secret: secret))
        } catch let error as StoreAPIError where error.huaweiCode == .consumedOrConfirmed {
            return  // confirmed or consumed already (the app's SDK may have done it)
        } catch let error as StoreAPIError {
            if error.kind == .credentialsRefused || error.kind == .notConfigured {
                logger.error(
                    "Huawei refused a confirmation; the operator must fix the client's app id or secret",
                    ["client.id": acknowledgement.clientID, "problem": error.message])
            }
            throw error.verificationError
        }
    }
}
