public import Foundation

/// An operating system a store's apps run on, as a dialect's device field names it.
public struct OperatingSystem: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue.lowercased() }

    public static let ios = OperatingSystem(rawValue: "ios")
    public static let android = OperatingSystem(rawValue: "android")
    /// A web shop: bought in a browser, outside the stores that sell inside apps.
    public static let web = OperatingSystem(rawValue: "web")
    /// Desktop systems, where a PC store's games run.
    public static let windows = OperatingSystem(rawValue: "windows")
    public static let macos = OperatingSystem(rawValue: "macos")
    public static let linux = OperatingSystem(rawValue: "linux")

    public var description: String { rawValue }
}

/// A form of evidence an app hands its server. A dialect whose wire format has one layout per
/// form reads the layout from here; one that cannot name the store compares the evidence's form
/// (`EvidenceShape.forms(of:)`) with what each candidate store accepts.
public enum EvidenceShape: String, Sendable, Hashable, CaseIterable {
    /// A document the store signed that names the app and product: a signed transaction (JWS),
    /// an app receipt.
    case signedDocument = "signed_document"
    /// An opaque purchase token, proven by asking the store with the app's identifier (and the
    /// product id, where the store needs one).
    case purchaseToken = "purchase_token"
    /// The purchase-data JSON object the store's SDK handed the app, the token inside.
    case purchaseData = "purchase_data"
    /// A receipt id the store proves only together with the store's user id (an evidence field).
    case receiptWithUser = "receipt_with_user"

    /// The forms a piece of evidence could have, judged from its text alone (nothing is trusted
    /// from this; it only narrows which store to ask).
    public static func forms(of evidence: String) -> Set<EvidenceShape> {
        let text = evidence.trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("{") { return [.purchaseData] }
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        // A compact JWS: three base64url segments, the header a JSON object ("eyJ").
        if segments.count == 3, text.hasPrefix("eyJ"),
            segments.allSatisfy({ !$0.isEmpty && $0.allSatisfy(isBase64URL) })
        {
            return [.signedDocument]
        }
        // A PKCS#7 app receipt in base64 starts with the DER SEQUENCE "MI".
        if text.hasPrefix("MI"), text.count > 64, text.allSatisfy({ isBase64URL($0) || "+/=".contains($0) }) {
            return [.signedDocument]
        }
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-:".contains($0)) }) {
            return [.purchaseToken, .receiptWithUser]
        }
        return []
    }

    private static func isBase64URL(_ character: Character) -> Bool {
        character.isASCII && (character.isLetter || character.isNumber || character == "-" || character == "_")
    }
}
