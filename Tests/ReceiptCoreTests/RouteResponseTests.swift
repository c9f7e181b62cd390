import Foundation
import ReceiptCore
import Testing

/// An answer that cannot be encoded is never sent as another body (once `{}`, a 200 that said
/// nothing): the client gets a 500 with a stable code, and the reason is kept for the log.
@Suite struct RouteResponseEncoding {
    struct Refuses: Encodable {
        struct Broken: Error {}
        func encode(to encoder: any Encoder) throws { throw Broken() }
    }

    @Test(arguments: ["non-finite number", "throwing Encodable"])
    func anAnswerThatCannotBeEncodedIsA500WithAStableCode(_ kind: String) throws {
        let response =
            kind == "throwing Encodable"
            ? RouteResponse.json(Refuses()) : RouteResponse.json(["ratio": Double.nan], status: 201)
        #expect(response.status == 500)
        #expect(response.contentType == "application/json")
        let body = try #require(try JSONSerialization.jsonObject(with: response.body) as? [String: String])
        #expect(body["error"] == "INTERNAL_ERROR")
        #expect(response.failure?.contains("could not be encoded") == true)
    }

    @Test func encodedJSONThrowsWhereThereIsNoAnswerToStandIn() throws {
        #expect(throws: EncodingError.self) { try RouteResponse.encodedJSON(["ratio": Double.infinity]) }
        #expect(throws: Refuses.Broken.self) { try RouteResponse.encodedJSON(Refuses()) }
        // What can be encoded is unchanged: sorted keys, slashes as they are, no failure noted.
        let response = RouteResponse.json(["b": "x/y", "a": "1"], status: 201)
        #expect(response.status == 201 && response.failure == nil)
        #expect(String(decoding: response.body, as: UTF8.self) == #"{"a":"1","b":"x/y"}"#)
        #expect(try RouteResponse.encodedJSON(["b": "x/y", "a": "1"]) == response.body)
    }
}
