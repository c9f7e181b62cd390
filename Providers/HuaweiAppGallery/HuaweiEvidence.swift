package import Foundation

/// What a client may send as Huawei evidence, told apart automatically: a bare purchase token,
/// the `InAppPurchaseData` JSON the IAP SDK returned, or `{"inAppPurchaseData": "<json>",
/// "inAppDataSignature": ...}` as many clients forward it. The JSON is a hint (which product,
/// subscription and site to ask): nothing in it is trusted, since only what Huawei's server
/// answers, signed, is read as the purchase.
package struct HuaweiEvidence: Sendable, Equatable {
    package var purchaseToken: String
    package var productID: String?
    package var subscriptionID: String?
    package var packageName: String?
    /// 2 for a subscription.
    package var kind: Int?
    package var accountFlag: Int?
    package var country: String?

    package struct Invalid: Error, CustomStringConvertible {
        package let message: String
        package var description: String { message }
    }

    /// Huawei's tokens are about 92 characters today and may grow; they are letters, digits and
    /// `.`, `_`, `-`.
    static let maxTokenLength = 1024

    package init(purchaseToken: String) { self.purchaseToken = purchaseToken }

    package var isSubscription: Bool { kind == 2 || (kind == nil && subscriptionID != nil) }

    package static func parse(_ evidence: String) throws -> HuaweiEvidence {
        let text = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw Invalid(message: "the receipt is empty") }
        guard text.hasPrefix("{") else { return try bareToken(text) }
        guard var object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw Invalid(message: "the receipt starts like JSON but is not a JSON object")
        }
        if let inner = object["inAppPurchaseData"] as? String ?? object["InAppPurchaseData"] as? String {
            guard let decoded = (try? JSONSerialization.jsonObject(with: Data(inner.utf8))) as? [String: Any] else {
                throw Invalid(message: "inAppPurchaseData is not a JSON object")
            }
            object = decoded
        }
        guard let token = object["purchaseToken"] as? String else {
            throw Invalid(
                message: "the receipt is JSON but neither InAppPurchaseData nor {inAppPurchaseData, inAppDataSignature}"
            )
        }
        var parsed = try bareToken(token)
        parsed.productID = object["productId"] as? String
        parsed.subscriptionID = object["subscriptionId"] as? String
        parsed.packageName = object["packageName"] as? String
        parsed.kind = integer(object["kind"])
        parsed.accountFlag = integer(object["accountFlag"])
        parsed.country = object["country"] as? String
        return parsed
    }

    static func bareToken(_ text: String) throws -> HuaweiEvidence {
        guard text.utf8.count <= maxTokenLength,
            text.unicodeScalars.allSatisfy({
                $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "._-".unicodeScalars.contains($0))
            })
        else {
            throw Invalid(message: "a purchase token is letters, digits, '.', '_' and '-' (at most \(maxTokenLength))")
        }
        return HuaweiEvidence(purchaseToken: text)
    }

    private static func integer(_ value: Any?) -> Int? {
        if let number = value as? NSNumber { return number.intValue }
        if let text = value as? String { return Int(text) }
        return nil
    }
}

extension HuaweiEvidence {
    /// Evidence only Huawei's IAP SDK makes: its `{inAppPurchaseData, inAppDataSignature}` pair,
    /// or `InAppPurchaseData` with Huawei's own fields. Only tells Huawei apart from other Android
    /// stores; proves nothing.
    @Sendable package static func isUnmistakablyHuaweis(_ evidence: String) -> Bool {
        let text = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("{"),
            let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any]
        else { return false }
        if object["inAppPurchaseData"] != nil || object["InAppPurchaseData"] != nil { return true }
        return object["purchaseToken"] != nil
            && (object["applicationId"] != nil || object["accountFlag"] != nil || object["payOrderId"] != nil)
    }
}
