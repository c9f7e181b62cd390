import AppStore
import Foundation
import OpenSSLCrypto

/// A throwaway Apple-shaped chain (root → WWDR-marked intermediate → App-Store-marked leaf) and
/// ES256 JWS signed with it, so the benchmark needs no corpus and no test code.
struct BenchPKI {
    private let chain: AppleShapedChain
    var root: Certificate { chain.root }

    init() throws {
        chain = try AppleShapedChain(
            names: ("Bench Root", "Bench Intermediate", "Bench Leaf"), until: Date(timeIntervalSinceNow: 86_400 * 30))
    }

    /// A sandbox purchase of com.example.game with this transaction id (a consumable unless told).
    func transaction(id: String, product: String = "gems.100", type: String = "Consumable") throws -> String {
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let payload: [String: Any] = [
            "transactionId": id, "originalTransactionId": id, "bundleId": "com.example.game", "productId": product,
            "purchaseDate": now - 60_000, "originalPurchaseDate": now - 60_000, "quantity": 1, "type": type,
            "inAppOwnershipType": "PURCHASED", "signedDate": now, "environment": "Sandbox", "storefront": "USA",
            "price": 990, "currency": "USD",
        ]
        return try chain.sign(payload: try JSONSerialization.data(withJSONObject: payload, options: [.sortedKeys]))
    }
}
