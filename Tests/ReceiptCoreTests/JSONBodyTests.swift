import Foundation
import ReceiptCore
import Testing

/// Every API decodes request bodies through `JSONBody`: a mistake is a 400-class problem that
/// names the field, with the shared code for it.
@Suite struct JSONBodies {
    private struct Order: Decodable {
        struct Item: Decodable { let sku: String; let quantity: Int }
        let store: String
        let items: [Item]
    }

    @Test func validBodyDecodes() throws {
        let order = try JSONBody.decode(
            Order.self, from: Data(#"{"store":"app_store","items":[{"sku":"gems","quantity":2}]}"#.utf8)
        ).get()
        #expect(order.store == "app_store")
        #expect(order.items.first?.quantity == 2)
    }

    @Test(arguments: [
        (#"{"items":[]}"#, ErrorCode.missingFields, "'store'"),
        (#"{"store":1,"items":[]}"#, .invalidField, "'store'"),
        (#"{"store":"s","items":[{"sku":"a"}]}"#, .missingFields, "'items[0].quantity'"),
        (#"{"store":"s","items":[{"sku":"a","quantity":"2"}]}"#, .invalidField, "'items[0].quantity'"),
        (#"{"store":null,"items":[]}"#, .missingFields, "'store'"),
        (#"{"store":"s""#, .invalidField, "not valid JSON"),
        (#"[1,2]"#, .invalidField, "JSON object"),
        ("", .missingFields, "empty"),
    ])
    func decodingErrorsNameTheField(json: String, code: ErrorCode, mention: String) throws {
        guard case .failure(let problem) = JSONBody.decode(Order.self, from: Data(json.utf8)) else {
            Issue.record("\(json) decoded")
            return
        }
        #expect(problem.code == code)
        #expect(problem.message.contains(mention), "message was: \(problem.message)")
    }
}
