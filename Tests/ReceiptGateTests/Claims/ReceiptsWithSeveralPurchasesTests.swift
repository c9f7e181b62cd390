import AppStore
import AppStoreTestSupport
import Foundation
import ReceiptGate
import TestSupport
import Testing

/// A StoreKit 1 app receipt holding several unfinished purchases of one product (a player bought
/// it three times before the game finished any): each claim of that product takes the oldest
/// purchase not yet claimed, so every purchase is delivered once, and only then is it a duplicate.
@Suite struct ReceiptsWithSeveralPurchases {
    /// A receipt payload for com.example.game whose purchases carry their own purchase dates.
    static func payload(_ purchases: [(id: String, product: String, date: Date)]) -> Data {
        let formatter = ISO8601DateFormatter()
        var attributes = [
            DER.attribute(0, DER.utf8("ProductionSandbox")), DER.attribute(2, DER.utf8("com.example.game")),
            DER.attribute(3, DER.utf8("1.0")), DER.attribute(12, DER.ia5(formatter.string(from: Date()))),
            DER.attribute(19, DER.utf8("1.0")),
        ]
        for purchase in purchases {
            attributes.append(
                DER.attribute(
                    17,
                    DER.set([
                        DER.attribute(1701, DER.integer(1)), DER.attribute(1702, DER.utf8(purchase.product)),
                        DER.attribute(1703, DER.utf8(purchase.id)), DER.attribute(1705, DER.utf8(purchase.id)),
                        DER.attribute(1704, DER.ia5(formatter.string(from: purchase.date))),
                        DER.attribute(1706, DER.ia5(formatter.string(from: purchase.date))),
                        DER.attribute(1708, DER.ia5("")),
                    ])))
        }
        return DER.set(attributes)
    }

    /// The service confirming StoreKit 1 receipts through the (fake) App Store Server API.
    static func start(_ apple: FakeAppStoreServerAPI) async throws -> VerifyHarness {
        let receiptRoot = try TestReceipts.signingPKI().root
        return try await VerifyHarness.start(pki: apple.pki) { pki in
            var appStore = apple.appStoreConfiguration(trusting: pki)
            appStore.receiptTrustRoots = [receiptRoot]
            appStore.receiptMode = .serverAPI
            return appStore
        }
    }

    @Test(arguments: ["Consumable", "Non-Consumable"])
    func eachClaimTakesTheOldestPurchaseNotYetClaimed(type: String) async throws {
        let apple = try FakeAppStoreServerAPI()
        let harness = try await Self.start(apple)
        defer { harness.stop(); Task.detached { await apple.shutdown() } }
        // Listed neither by id nor by date: the order of the claims must come from the dates.
        let start = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3 * 86_400).rounded(.down))
        let purchases = [
            (id: "2000000000770002", product: "gems.100", date: start.addingTimeInterval(7200)),
            (id: "2000000000770003", product: "gems.100", date: start),
            (id: "2000000000770001", product: "gems.100", date: start.addingTimeInterval(3600)),
        ]
        for purchase in purchases {
            let millis = Int64(purchase.date.timeIntervalSince1970 * 1000)
            try apple.add(
                purchase.id, environment: "Sandbox",
                [
                    "originalTransactionId": purchase.id, "productId": purchase.product, "type": type,
                    "purchaseDate": millis, "originalPurchaseDate": millis,
                ])
        }
        let receipt = try TestReceipts.sign(Self.payload(purchases), streamed: false)

        var answers: [[String: Any]] = []
        for _ in 0..<4 {
            let answer = try await ClaimSupport.claim(
                harness.client, receipt: receipt, extra: ["product_id": "gems.100"])
            #expect(answer.status == 200, "\(answer.text)")
            answers.append(try answer.json())
        }
        let claimed = answers.map { ($0["transaction"] as? [String: Any])?["transaction_id"] as? String }
        #expect(
            Array(claimed.prefix(3)) == ["2000000000770003", "2000000000770001", "2000000000770002"],
            "oldest first: \(claimed)")
        #expect(answers.map { $0["duplicate"] as? Bool } == [false, false, false, true])
        #expect(try await harness.count("transactions") == 3)
        for purchase in purchases {
            #expect(
                try await ClaimSupport.record(harness.client, purchase.id).transaction["claim"] is [String: Any],
                "\(purchase.id) was claimed")
        }
        await harness.service.shutdown()
    }
}
