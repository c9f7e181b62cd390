package import Foundation
import JSON

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
        guard var object = JSONValue(parsing: Data(text.utf8))?.object else {
            throw Invalid(message: "the receipt starts like JSON but is not a JSON object")
        }
        if let inner = object["inAppPurchaseData"]?.string ?? object["InAppPurchaseData"]?.string {
            guard let decoded = JSONValue(parsing: Data(inner.utf8))?.object else {
                throw Invalid(message: "inAppPurchaseData is not a JSON object")
            }
            object = decoded
        }
        guard let token = object["purchaseToken"]?.string else {
            throw Invalid(
                message: "the receipt is JSON but neither InAppPurchaseData nor {inAppPurchaseData, inAppDataSignature}"
            )
        }
        var parsed = try bareToken(token)
        parsed.productID = object["productId"]?.string
        parsed.subscriptionID = object["subscriptionId"]?.string
        parsed.packageName = object["packageName"]?.string
        parsed.kind = integer(object["kind"])
        parsed.accountFlag = integer(object["accountFlag"])
        parsed.country = object["country"]?.string
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

    /// A number (a fraction cut), or a number sent as text.
    private static func integer(_ value: JSONValue?) -> Int? {
        if let text = value?.string { return Int(text) }
        return value?.truncatedInteger.map { Int($0) }
    }
}

extension HuaweiEvidence {
    /// Evidence only Huawei's IAP SDK makes: its `{inAppPurchaseData, inAppDataSignature}` pair,
    /// or `InAppPurchaseData` with Huawei's own fields. Only tells Huawei apart from other Android
    /// stores; proves nothing.
    @Sendable package static func isUnmistakablyHuaweis(_ evidence: String) -> Bool {
        let text = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("{"),
            let object = JSONValue(parsing: Data(text.utf8))?.object
        else { return false }
        if object["inAppPurchaseData"] != nil || object["InAppPurchaseData"] != nil { return true }
        return object["purchaseToken"] != nil
            && (object["applicationId"] != nil || object["accountFlag"] != nil || object["payOrderId"] != nil)
    }
}
