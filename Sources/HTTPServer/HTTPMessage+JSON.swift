package import Foundation

extension HTTPResponse {
    /// A JSON body with `Content-Type: application/json`.
    package static func json(
        _ value: some Encodable, status: Int = 200, encoder: JSONEncoder = .receiptGate
    ) -> HTTPResponse {
        do {
            return HTTPResponse(
                status: status, headers: ["Content-Type": "application/json"], body: try encoder.encode(value))
        } catch {
            return HTTPResponse(
                status: 500, headers: ["Content-Type": "application/json"],
                body: Data(#"{"error":"INTERNAL_ERROR","message":"response could not be encoded"}"#.utf8))
        }
    }
}

extension JSONEncoder {
    /// Stable output: sorted keys, no escaped slashes.
    package static var receiptGate: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
