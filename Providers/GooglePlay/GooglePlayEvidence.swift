package import Foundation
import JSON

/// What a client may send as Google Play evidence, told apart automatically: a bare purchase
/// token, the Play Billing purchase JSON (`Purchase.getOriginalJson()`, optionally with its
/// `signature`), or Unity IAP's receipt wrapper around both.
package struct GooglePlayEvidence: Sendable, Equatable {
    package var purchaseToken: String
    package var packageName: String?
    package var productID: String?
    package var orderID: String?
    /// The purchase JSON exactly as signed, and its base64 signature, when sent.
    package var signedJSON: Data?
    package var signature: String?
    /// Play Billing purchase JSON of a subscription carries `autoRenewing`.
    package var isSubscription: Bool?

    package struct Invalid: Error, CustomStringConvertible {
        package let message: String
        package var description: String { message }
    }

    /// Google's purchase tokens are long strings of letters, digits, `.`, `_` and `-`.
    static let maxTokenLength = 4096

    package static func parse(_ evidence: String) throws -> GooglePlayEvidence {
        let text = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw Invalid(message: "the receipt is empty") }
        guard text.hasPrefix("{") else { return try bareToken(text) }
        guard let object = JSONValue(parsing: Data(text.utf8))?.object else {
            throw Invalid(message: "the receipt starts like JSON but is not a JSON object")
        }
        if let payload = object["Payload"]?.string {
            // Unity IAP: {"Store":"GooglePlay","TransactionID":...,"Payload":"{\"json\":\"...\",\"signature\":\"...\"}"}
            if let store = object["Store"]?.string, store != "GooglePlay" {
                throw Invalid(message: "the Unity receipt is from \(store), not GooglePlay")
            }
            guard let inner = JSONValue(parsing: Data(payload.utf8))?.object, let json = inner["json"]?.string else {
                throw Invalid(message: "the Unity receipt's Payload must hold the purchase json and signature")
            }
            return try purchaseJSON(Data(json.utf8), signature: inner["signature"]?.string)
        }
        if let json = object["json"]?.string {
            // {"json": "<original json>", "signature": "..."} as many clients forward it.
            return try purchaseJSON(Data(json.utf8), signature: object["signature"]?.string)
        }
        if object["purchaseToken"] != nil {
            // The purchase JSON itself; a `signature` beside it is not part of what Google signed.
            if object["signature"] != nil {
                var rest = object
                let signature = rest.removeValue(forKey: "signature")?.string
                guard let original = object["originalJson"]?.string else {
                    // The signed bytes are gone once fields are mixed in: only the API can vouch.
                    var parsed = try fields(rest)
                    parsed.signature = signature
                    parsed.signedJSON = nil
                    return parsed
                }
                return try purchaseJSON(Data(original.utf8), signature: signature)
            }
            return try purchaseJSON(Data(text.utf8), signature: nil)
        }
        throw Invalid(
            message: "the receipt is JSON but neither a Play purchase, nor {json, signature}, nor a Unity receipt")
    }

    static func bareToken(_ text: String) throws -> GooglePlayEvidence {
        guard text.count <= maxTokenLength,
            text.unicodeScalars.allSatisfy({
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0))
            })
        else {
            throw Invalid(message: "a purchase token is letters, digits, '.', '_' and '-' (at most \(maxTokenLength))")
        }
        return GooglePlayEvidence(purchaseToken: text)
    }

    static func purchaseJSON(_ data: Data, signature: String?) throws -> GooglePlayEvidence {
        guard let object = JSONValue(parsing: data)?.object else {
            throw Invalid(message: "the purchase json is not a JSON object")
        }
        var parsed = try fields(object)
        parsed.signedJSON = data
        parsed.signature = signature.flatMap { $0.isEmpty ? nil : $0 }
        return parsed
    }

    private static func fields(_ object: [String: JSONValue]) throws -> GooglePlayEvidence {
        guard let token = object["purchaseToken"]?.string else {
            throw Invalid(message: "the purchase json has no purchaseToken")
        }
        var parsed = try bareToken(token)
        parsed.packageName = object["packageName"]?.string
        // Older purchases carry `productId`; Play Billing 5+ a `productIds` list (of strings only).
        parsed.productID = object["productId"]?.string ?? strings(object["productIds"])?.first
        parsed.orderID = object["orderId"]?.string
        parsed.isSubscription = object["autoRenewing"] != nil ? true : nil
        return parsed
    }

    /// An array whose elements are all strings; nil for anything else.
    private static func strings(_ value: JSONValue?) -> [String]? {
        guard let elements = value?.array else { return nil }
        let strings = elements.compactMap(\.string)
        return strings.count == elements.count ? strings : nil
    }
}

extension GooglePlayEvidence {
    /// Evidence only Play makes: a Unity receipt naming `GooglePlay`, or a purchase JSON whose
    /// order id is Play's (`GPA.`). Only tells Play apart from other Android stores; proves nothing.
    @Sendable package static func isUnmistakablyPlays(_ evidence: String) -> Bool {
        let text = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("{"),
            let object = JSONValue(parsing: Data(text.utf8))?.object
        else { return false }
        if object["Payload"] != nil { return object["Store"]?.string == "GooglePlay" }
        return (try? parse(text))?.orderID?.hasPrefix("GPA.") == true
    }
}
