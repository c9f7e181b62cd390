public import AppStore
public import Foundation
import TestSupport

/// What the hand-written StoreKit 2 payload decoding must make of a payload, worked out from
/// JSONSerialization's parse of the same raw bytes, a parser it shares no code with: the values
/// JSONDecoder would give these optional fields (null as nil, the first of duplicate keys, a
/// wrong type refusing the whole payload), or `undecided` where JSONSerialization cannot settle
/// it: a document it refuses (the reader's lenient grammar then decides, checked against
/// JSONDecoder by the JSON module's tests), or an integer beyond 2^53 written as a double, whose
/// digits JSONSerialization has already rounded.
public enum StoreKitPayloadReference {
    public enum Outcome<Value: Equatable>: Equatable {
        /// The decoded value, or nil for a refusal.
        case decided(Value?)
        case undecided
    }

    public static func transaction(_ payload: Data) -> Outcome<JWSTransactionDecodedPayload> {
        decide(payload) { object throws(Verdict) in
            var decoded = JWSTransactionDecodedPayload()
            decoded.originalTransactionId = try string(object["originalTransactionId"])
            decoded.transactionId = try string(object["transactionId"])
            decoded.webOrderLineItemId = try string(object["webOrderLineItemId"])
            decoded.bundleId = try string(object["bundleId"])
            decoded.productId = try string(object["productId"])
            decoded.subscriptionGroupIdentifier = try string(object["subscriptionGroupIdentifier"])
            decoded.purchaseDate = try date(object["purchaseDate"])
            decoded.originalPurchaseDate = try date(object["originalPurchaseDate"])
            decoded.expiresDate = try date(object["expiresDate"])
            decoded.quantity = try int64(object["quantity"]).map(Int.init)
            decoded.type = try string(object["type"]).map(TransactionType.init(rawValue:))
            decoded.appAccountToken = try string(object["appAccountToken"])
            decoded.inAppOwnershipType = try string(object["inAppOwnershipType"]).map(
                InAppOwnershipType.init(rawValue:))
            decoded.signedDate = try date(object["signedDate"])
            decoded.revocationReason = try int64(object["revocationReason"]).map { RevocationReason(rawValue: Int($0)) }
            decoded.revocationDate = try date(object["revocationDate"])
            decoded.isUpgraded = try bool(object["isUpgraded"])
            decoded.offerType = try int64(object["offerType"]).map { OfferType(rawValue: Int($0)) }
            decoded.offerIdentifier = try string(object["offerIdentifier"])
            decoded.environment = try string(object["environment"]).map(AppStoreEnvironment.init(rawValue:))
            decoded.storefront = try string(object["storefront"])
            decoded.storefrontId = try string(object["storefrontId"])
            decoded.transactionReason = try string(object["transactionReason"]).map(TransactionReason.init(rawValue:))
            decoded.currency = try string(object["currency"])
            decoded.price = try int64(object["price"])
            decoded.offerDiscountType = try string(object["offerDiscountType"]).map(OfferDiscountType.init(rawValue:))
            decoded.appTransactionId = try string(object["appTransactionId"])
            decoded.offerPeriod = try string(object["offerPeriod"])
            decoded.revocationType = try string(object["revocationType"]).map(RevocationType.init(rawValue:))
            decoded.revocationPercentage = try int64(object["revocationPercentage"]).map(Int.init)
            decoded.advancedCommerceInfo = try nested(
                object["advancedCommerceInfo"], as: AdvancedCommerceTransactionInfo.self)
            decoded.billingPlanType = try string(object["billingPlanType"]).map(BillingPlanType.init(rawValue:))
            decoded.commitmentInfo = try nested(object["commitmentInfo"], as: TransactionCommitmentInfo.self)
            return decoded
        }
    }

    /// `signedDate` and `receiptCreationDate`, the dates a signed payload is judged at.
    public static func signingDates(_ payload: Data) -> Outcome<[AppStoreDate?]> {
        decide(payload) { object throws(Verdict) in
            [try date(object["signedDate"]), try date(object["receiptCreationDate"])]
        }
    }

    enum Verdict: Error { case refused, undecided }

    private static func decide<Value>(
        _ payload: Data, _ read: ([String: Any]) throws(Verdict) -> Value
    ) -> Outcome<Value> {
        // A NUL byte is never valid UTF-8 JSON: such a payload is UTF-16 or UTF-32, which the split cannot read.
        guard !payload.contains(0),
            let top = try? JSONSerialization.jsonObject(with: payload, options: [.fragmentsAllowed])
        else { return .undecided }
        guard top is NSDictionary else { return .decided(nil) }
        guard let members = TopLevelMembers.split(Array(payload)) else { return .undecided }
        var object: [String: Any] = [:]
        for (key, value) in members where object[key] == nil { object[key] = value }
        do throws(Verdict) {
            return .decided(try read(object))
        } catch {
            return error == .refused ? .decided(nil) : .undecided
        }
    }

    /// A nested object as JSONDecoder decodes it from JSONSerialization's own writing of it; an
    /// integer beyond 2^53 inside is not settled (its digits were rounded when parsed).
    private static func nested<Value: Decodable>(_ value: Any?, as type: Value.Type) throws(Verdict) -> Value? {
        guard let value, !(value is NSNull) else { return nil }
        guard let object = value as? [String: Any] else { throw .refused }
        if containsLargeDouble(object) { throw .undecided }
        do {
            let data = try JSONSerialization.data(withJSONObject: object)
            return try JSONDecoder().decode(type, from: data)
        } catch {
            throw .refused
        }
    }

    private static func containsLargeDouble(_ value: Any) -> Bool {
        if let number = value as? NSNumber, !isBoolean(number) {
            let code = String(cString: number.objCType)
            return (code == "d" || code == "f") && abs(number.doubleValue) >= 0x1p53
        }
        if let object = value as? [String: Any] { return object.values.contains(where: containsLargeDouble) }
        if let array = value as? [Any] { return array.contains(where: containsLargeDouble) }
        return false
    }

    private static func string(_ value: Any?) throws(Verdict) -> String? {
        guard let value, !(value is NSNull) else { return nil }
        guard let string = value as? String else { throw .refused }
        return string
    }

    private static func bool(_ value: Any?) throws(Verdict) -> Bool? {
        guard let value, !(value is NSNull) else { return nil }
        guard let number = value as? NSNumber, isBoolean(number) else { throw .refused }
        return number.boolValue
    }

    /// As JSONDecoder decodes an Int64: an integer exactly, or a double that is a whole number.
    private static func int64(_ value: Any?) throws(Verdict) -> Int64? {
        guard let value, !(value is NSNull) else { return nil }
        guard let number = value as? NSNumber, !isBoolean(number) else { throw .refused }
        switch String(cString: number.objCType) {
        case "d", "f":
            let double = number.doubleValue
            guard double.isFinite, double.rounded(.towardZero) == double else { throw .refused }
            guard abs(double) < 0x1p53 else { throw .undecided }
            return Int64(double)
        case "Q":
            guard number.uint64Value <= UInt64(Int64.max) else { throw .refused }
            return Int64(number.uint64Value)
        default:
            return number.int64Value
        }
    }

    /// Whole milliseconds; failing that, a double inside ±9e15 rounded down.
    private static func date(_ value: Any?) throws(Verdict) -> AppStoreDate? {
        do throws(Verdict) {
            return try int64(value).map(AppStoreDate.init(milliseconds:))
        } catch  where error == .refused {
            guard let number = value as? NSNumber, !isBoolean(number) else { throw .refused }
            let double = number.doubleValue
            guard double.isFinite, abs(double) < 9e15 else { throw .refused }
            return AppStoreDate(milliseconds: Int64(double.rounded(.down)))
        }
    }

    /// JSONSerialization gives `true` and `1` alike as NSNumber; a boolean's type code is `c`.
    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
