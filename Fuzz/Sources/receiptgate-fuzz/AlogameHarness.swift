import AlogameGateway
import Foundation
import PluginTestSupport
import ReceiptCore

/// The Alogame gateway's two routes on arbitrary bodies, run as the service runs them (the fake
/// core authenticates the client, the dialect decodes and answers). Every answer must be the
/// seed's JSON envelope with a status of its table — never a 500.
enum AlogameHarness {
    static let client = ClientInfo(
        clientID: "rgc_fuzz", gameID: 42, appIdentifiers: ["bundle_id": ["com.example.game"]],
        environments: [.production, .sandbox])
    static let core: FakeCore = {
        let core = FakeCore()
        core.clients = [client]
        var purchase = VerifiedPurchase(store: .appStore, environment: .sandbox, transactionID: "2000000000000777")
        purchase.productID = "gems100"
        purchase.quantity = 1
        core.add(evidence: "jws-777", proves: purchase)
        core.add(
            evidence: "jws-bad",
            refusedWith: StoreVerificationError(code: .verificationFailed, reason: "FORGED", message: "no"))
        return core
    }()

    static func run(_ data: Data) {
        for path in ["/iap/gateway/verify", "/iap/gateway/lookup-receipt"] {
            let response = runBlocking { await core.call(AlogameGateway(), "POST", path, body: data, signedAs: client) }
            guard [200, 400, 401, 403, 409, 412, 422, 429, 502].contains(response.status) else {
                fatalError("\(path) answered \(response.status)")
            }
            guard let object = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any],
                object["success"] is Bool
                    || object["order_id"] != nil
            else {
                fatalError("\(path) answered a body outside the envelope")
            }
        }
    }
}
