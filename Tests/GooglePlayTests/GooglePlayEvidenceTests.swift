import Foundation
import GooglePlay
import Testing

/// The evidence layouts a client may forward, read as they always were: the purchase JSON kept as
/// signed, JSON nested in a string, loosely typed fields taken only when they have the right type.
@Suite struct GooglePlayEvidenceLayouts {
    static let purchase =
        #"{"orderId":"GPA.1","packageName":"com.example.game","productId":"gems","purchaseToken":"tok-1"}"#

    @Test func theUnityWrapperHoldsThePurchaseAsJSONInAString() throws {
        let payload = String(
            decoding: try JSONEncoder().encode(["json": Self.purchase, "signature": "c2ln"]), as: UTF8.self)
        let unity = String(
            decoding: try JSONEncoder().encode(["Store": "GooglePlay", "TransactionID": "GPA.1", "Payload": payload]),
            as: UTF8.self)
        let parsed = try GooglePlayEvidence.parse(unity)
        #expect(parsed.purchaseToken == "tok-1")
        #expect(parsed.orderID == "GPA.1")
        #expect(parsed.signature == "c2ln")
        #expect(parsed.signedJSON == Data(Self.purchase.utf8), "the signed bytes are kept exactly")
        #expect(GooglePlayEvidence.isUnmistakablyPlays(unity))

        let other = unity.replacingOccurrences(of: "GooglePlay", with: "AppleAppStore")
        #expect(throws: GooglePlayEvidence.Invalid.self) { try GooglePlayEvidence.parse(other) }
        #expect(!GooglePlayEvidence.isUnmistakablyPlays(other))
    }

    @Test func theLastOfDuplicateKeysAndTrailingCommasAreTakenAsBefore() throws {
        let parsed = try GooglePlayEvidence.parse(
            #"{"purchaseToken":"first","purchaseToken":"tok-2","productIds":["a","b"],}"#)
        #expect(parsed.purchaseToken == "tok-2")
        #expect(parsed.productID == "a")
    }

    @Test func aFieldOfAnotherTypeIsAbsent() throws {
        let parsed = try GooglePlayEvidence.parse(
            #"{"purchaseToken":"tok-3","productId":7,"productIds":["a",1],"packageName":null,"orderId":true}"#)
        #expect(parsed.productID == nil)
        #expect(parsed.packageName == nil)
        #expect(parsed.orderID == nil)
        #expect(throws: GooglePlayEvidence.Invalid.self) { try GooglePlayEvidence.parse(#"{"purchaseToken":1}"#) }
    }

    @Test func aDocumentWithAnInvalidValueAnywhereIsNotJSON() {
        for text in [#"{"purchaseToken":"tok","x":{"y":01}}"#, #"{"purchaseToken":"tok","x":["\ud800"]}"#] {
            #expect {
                try GooglePlayEvidence.parse(text)
            } throws: { error in
                (error as? GooglePlayEvidence.Invalid)?.message.contains("not a JSON object") == true
            }
        }
    }
}
