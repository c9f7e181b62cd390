package import Foundation
import OpenSSLCrypto

/// A StoreKit 1 app receipt, parsed locally from its base64 PKCS#7 container. Parsing proves
/// nothing: a receipt is genuine only once its signature verifies to a receipt root
/// (`AppReceiptAuthenticator`) and Apple confirms its transactions (`AppReceiptValidator`).
public struct AppReceipt: Sendable, Equatable {
    /// Field 0: "Production" or "ProductionSandbox".
    package var receiptType: String?
    package var bundleID: String?
    package var applicationVersion: String?
    package var originalApplicationVersion: String?
    package var creationDate: Date?
    package var expirationDate: Date?
    package var inApp: [InAppPurchase] = []

    package struct InAppPurchase: Sendable, Equatable {
        package var quantity: Int64?
        package var productID: String?
        package var transactionID: String?
        package var originalTransactionID: String?
        package var purchaseDate: Date?
        package var originalPurchaseDate: Date?
        package var expiresDate: Date?
        package var webOrderLineItemID: Int64?
        package var cancellationDate: Date?
        package var isInIntroOfferPeriod: Bool?
        package var promotionalOfferID: String?
    }

    public var environment: AppStoreEnvironment? {
        switch receiptType {
        case "Production": .production
        case "ProductionSandbox", "Sandbox": .sandbox
        default: nil
        }
    }

    /// The largest receipt accepted (Apple's are well under this).
    package static let maxBase64Length = 2_000_000

    /// Parses without authenticating: for inspection only; verification goes through
    /// `AppReceiptAuthenticator`.
    public init(base64 text: String) throws(AppStoreVerificationError) {
        try self.init(payload: try Self.container(base64: text).container.content)
    }

    /// The container's DER bytes and their parse (nothing authenticated yet).
    static func container(
        base64 text: String
    ) throws(AppStoreVerificationError) -> (der: Data, container: PKCS7Container) {
        guard text.utf8.count <= Self.maxBase64Length else {
            throw Self.malformed("receipt is larger than \(Self.maxBase64Length) characters")
        }
        guard let der = Base64.decodeLenient(text) else { throw Self.malformed("receipt is not base64") }
        do {
            return (der, try PKCS7Container(der: der))
        } catch {
            throw Self.malformed("receipt is not a PKCS#7 container: \(error)")
        }
    }

    init(payload: Data) throws(AppStoreVerificationError) {
        var content = payload
        // Some producers wrap the payload SET in one more OCTET STRING.
        if content.first == 0x04, let inner = try? ASN1Element.single(in: content) { content = inner.contents }
        let attributes = try Self.attributes(of: content)
        for (type, value) in attributes {
            switch type {
            case 0: receiptType = Self.string(value)
            case 2: bundleID = Self.string(value)
            case 3: applicationVersion = Self.string(value)
            case 12: creationDate = Self.date(value)
            case 19: originalApplicationVersion = Self.string(value)
            case 21: expirationDate = Self.date(value)
            case 17: inApp.append(try InAppPurchase(attributes: try Self.attributes(of: value)))
            default: continue
            }
        }
        guard bundleID != nil else { throw Self.malformed("receipt has no bundle id") }
    }

    /// The payload is a SET of `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`.
    static func attributes(of payload: Data) throws(AppStoreVerificationError) -> [(Int64, Data)] {
        do {
            let set = try ASN1Element.single(in: payload)
            guard set.tag == ASN1Element.setTag, set.isConstructed else {
                throw CryptoError(.invalidEncoding, "payload is not a SET")
            }
            return try ASN1Element.sequence(in: set.contents).map { element in
                let fields = try ASN1Element.sequence(in: element.contents)
                guard element.tag == ASN1Element.sequenceTag, fields.count == 3, let type = fields[0].integerValue,
                    fields[2].tag == ASN1Element.octetStringTag
                else { throw CryptoError(.invalidEncoding, "not a receipt attribute") }
                return (type, fields[2].contents)
            }
        } catch {
            throw malformed("receipt payload is not a set of attributes: \(error)")
        }
    }

    static func string(_ value: Data) -> String? {
        (try? ASN1Element.single(in: value))?.stringValue
    }

    static func integer(_ value: Data) -> Int64? {
        (try? ASN1Element.single(in: value))?.integerValue
    }

    /// RFC 3339 (`2025-10-16T06:51:26Z`); empty strings mean "none".
    static func date(_ value: Data) -> Date? {
        guard let text = string(value), !text.isEmpty else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text)
    }

    static func malformed(_ message: String) -> AppStoreVerificationError {
        AppStoreVerificationError(.receiptMalformed, message)
    }
}

extension AppReceipt.InAppPurchase {
    init(attributes: [(Int64, Data)]) throws(AppStoreVerificationError) {
        for (type, value) in attributes {
            switch type {
            case 1701: quantity = AppReceipt.integer(value)
            case 1702: productID = AppReceipt.string(value)
            case 1703: transactionID = AppReceipt.string(value)
            case 1704: purchaseDate = AppReceipt.date(value)
            case 1705: originalTransactionID = AppReceipt.string(value)
            case 1706: originalPurchaseDate = AppReceipt.date(value)
            case 1708: expiresDate = AppReceipt.date(value)
            case 1711: webOrderLineItemID = AppReceipt.integer(value)
            case 1712: cancellationDate = AppReceipt.date(value)
            case 1719: isInIntroOfferPeriod = AppReceipt.integer(value).map { $0 != 0 }
            case 1721: promotionalOfferID = AppReceipt.string(value)
            default: continue
            }
        }
    }
}
