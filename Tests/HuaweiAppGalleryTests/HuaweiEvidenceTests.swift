import Foundation
import HuaweiAppGallery
import Testing

/// Huawei evidence as clients forward it: `InAppPurchaseData` alone or as a JSON string beside
/// its signature, numbers sent as numbers, as text, or with a fraction.
@Suite struct HuaweiEvidenceLayouts {
    @Test func inAppPurchaseDataAsAJSONString() throws {
        let inner = #"{"purchaseToken":"tok.1","productId":"gems","kind":"2","accountFlag":1.0,"country":"DE"}"#
        let wrapped = String(
            decoding: try JSONEncoder().encode(["inAppPurchaseData": inner, "inAppDataSignature": "c2ln"]),
            as: UTF8.self)
        let parsed = try HuaweiEvidence.parse(wrapped)
        #expect(parsed.purchaseToken == "tok.1")
        #expect(parsed.productID == "gems")
        #expect(parsed.kind == 2, "a number sent as text")
        #expect(parsed.accountFlag == 1, "a whole number written with a fraction")
        #expect(parsed.country == "DE")
        #expect(parsed.isSubscription)
        #expect(HuaweiEvidence.isUnmistakablyHuaweis(wrapped))
    }

    @Test func fieldsOfAnotherTypeAreAbsentAndFractionsAreCut() throws {
        let parsed = try HuaweiEvidence.parse(
            #"{"purchaseToken":"tok","productId":5,"kind":2.7,"accountFlag":"x","applicationId":1}"#)
        #expect(parsed.productID == nil)
        #expect(parsed.kind == 2)
        #expect(parsed.accountFlag == nil)
        #expect(HuaweiEvidence.isUnmistakablyHuaweis(#"{"purchaseToken":"tok","payOrderId":null}"#))
        #expect(!HuaweiEvidence.isUnmistakablyHuaweis(#"{"purchaseToken":"tok"}"#))
    }

    @Test func refusals() {
        #expect(throws: HuaweiEvidence.Invalid.self) { try HuaweiEvidence.parse(#"{"purchaseToken":"tok","#) }
        #expect(throws: HuaweiEvidence.Invalid.self) { try HuaweiEvidence.parse(#"{"inAppPurchaseData":"[1]"}"#) }
        #expect(throws: HuaweiEvidence.Invalid.self) { try HuaweiEvidence.parse(#"{"purchaseToken":7}"#) }
    }
}
