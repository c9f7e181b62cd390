package import Foundation

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
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw Invalid(message: "the receipt starts like JSON but is not a JSON object")
        }
        if let payload = object["Payload"] as? String {
            // Unity IAP: {"Store":"GooglePlay","TransactionID":...,"Payload":"{\"json\":\"...\",\"signature\":\"...\"}"}
            if let store = object["Store"] as? String, store != "GooglePlay" {
                throw Invalid(message: "the Unity receipt is from \(store), not GooglePlay")
            }
            guard let inner = (try? JSONSerialization.jsonObject(with: Data(payload.utf8))) as? [String: Any],
                let json = inner["json"] as? String
            else {
                throw Invalid(message: "the Unity receipt's Payload must hold the purchase json and signature")
            }
            return try purchaseJSON(Data(json.utf8), signature: inner["signature"] as? String)
        }
        if let json = object["json"] as? String {
            // {"json": "<original json>", "signature": "..."} as many clients forward it.
            return try purchaseJSON(Data(json.utf8), signature: object["signature"] as? String)
        }
        if object["purchaseToken"] != nil {
            // The purchase JSON itself; a `signature` beside it is not part of what Google signed.
            if object["signature"] != nil {
                var rest = object
                let signature = rest.removeValue(forKey: "signature") as? String
                guard let original = object["originalJson"] as? String else {
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
        guard let object = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] else {
            throw Invalid(message: "the purchase json is not a JSON object")
        }
        var parsed = try fields(object)
        parsed.signedJSON = data
        parsed.signature = signature.flatMap { $0.isEmpty ? nil : $0 }
        return parsed
    }

    private static func fields(_ object: [String: Any]) throws -> GooglePlayEvidence {
        guard let token = object["purchaseToken"] as? String else {
            throw Invalid(message: "the purchase json has no purchaseToken")
        }
        var parsed = try bareToken(token)
        parsed.packageName = object["packageName"] as? String
        // Older purchases carry `productId`; Play Billing 5+ a `productIds` list.
        parsed.productID = object["productId"] as? String ?? (object["productIds"] as? [String])?.first
        parsed.orderID = object["orderId"] as? String
        parsed.isSubscription = object["autoRenewing"] != nil ? true : nil
        return parsed
    }
}

extension GooglePlayEvidence {
    /// Evidence only Play makes: a Unity receipt naming `GooglePlay`, or a purchase JSON whose
    /// order id is Play's (`GPA.`). Only tells Play apart from other Android stores; proves nothing.
    @Sendable package static func isUnmistakablyPlays(_ evidence: String) -> Bool {
        let text = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("{"),
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        else { return false }
        if object["Payload"] != nil { return object["Store"] as? String == "GooglePlay" }
        return (try? parse(text))?.orderID?.hasPrefix("GPA.") == true
    }
}
