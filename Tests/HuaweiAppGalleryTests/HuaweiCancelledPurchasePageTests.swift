import Foundation
import ReceiptCore
import Testing

@testable import HuaweiAppGallery

/// Pages of Huawei's cancelled list in each encoding it may take, records kept as sent (less the
/// token), numbers read whether sent as numbers or as text.
@Suite struct HuaweiCancelledPurchasePageDecoding {
    static let record =
        #"{"orderId":"o-1","productId":"gems","purchaseToken":"tok","purchaseTime":"1700000000000","cancelledTime":1700000001000,"cancelledSource":1.0,"cancelledReason":5,"note":"a/b"}"#

    static func page(list: String, token: String = #""next""#) -> Data {
        Data(#"{"responseCode":"0","cancelledPurchaseList":\#(list),"continuationToken":\#(token)}"#.utf8)
    }

    static func jsonString(_ text: String) throws -> String {
        String(decoding: try JSONEncoder().encode(text), as: UTF8.self)
    }

    @Test(arguments: ["string", "objects", "strings"])
    func eachEncodingOfTheListReadsTheSame(_ encoding: String) throws {
        let list =
            switch encoding {
            case "string": try Self.jsonString("[\(Self.record)]")
            case "objects": "[\(Self.record)]"
            default: "[\(try Self.jsonString(Self.record))]"
            }
        let page = try HuaweiCancelledPurchasePage.decode(Self.page(list: list))
        let purchase = try #require(page.purchases.first)
        #expect(page.purchases.count == 1)
        #expect(page.continuationToken == "next")
        #expect(purchase.orderId == "o-1")
        #expect(purchase.purchaseToken == "tok")
        #expect(purchase.purchaseTime == 1_700_000_000_000, "a number sent as text")
        #expect(purchase.cancelledTime == 1_700_000_001_000)
        #expect(purchase.cancelledSource == 1)
        #expect(purchase.cancelledReason == 5)
        #expect(
            String(decoding: purchase.kept, as: UTF8.self)
                == #"{"cancelledReason":5,"cancelledSource":1,"cancelledTime":1700000001000,"note":"a/b","orderId":"o-1","productId":"gems","purchaseTime":"1700000000000"}"#,
            "kept sorted, without the token, slashes as sent")
    }

    @Test func anEmptyOrUnreadableListIsAnEmptyPage() throws {
        for list in [#""""#, #"" ""#, "null", #""not json""#, #""5""#] {
            let page = try HuaweiCancelledPurchasePage.decode(Self.page(list: list, token: #""""#))
            #expect(page.purchases.isEmpty, "\(list)")
            #expect(page.continuationToken == nil)
        }
        #expect(try HuaweiCancelledPurchasePage.decode(Data(#"{"responseCode":"0"}"#.utf8)).purchases.isEmpty)
    }

    @Test func refusals() {
        for body in [Data("[]".utf8), Self.page(list: "5"), Self.page(list: #"[1]"#), Self.page(list: #"["[1]"]"#)] {
            let refusal = #expect(throws: StoreAPIError.self) { try HuaweiCancelledPurchasePage.decode(body) }
            #expect(refusal?.kind == .malformedAnswer)
        }
    }

    @Test func aNumericFieldSentAsTextOrWithAFractionIsReadAsText() throws {
        let page = try HuaweiCancelledPurchasePage.decode(
            Self.page(list: #"[{"orderId":12,"productId":2.5,"subscriptionId":""}]"#))
        let purchase = try #require(page.purchases.first)
        #expect(purchase.orderId == "12")
        #expect(purchase.productId == "2.5")
        #expect(purchase.subscriptionId == nil)
    }
}
