import Foundation
import JSON
import ReceiptCore

/// A Stripe object as it arrived, read loosely: every field optional, unknown values kept as
/// Stripe wrote them. Stripe adds fields and enum values in every version; a missing field is an
/// answer to work with, not a decoding failure.
struct StripeObject: Sendable, Equatable {
    let json: JSONValue

    init?(_ json: JSONValue?) {
        guard let json, json.object != nil else { return nil }
        self.json = json
    }

    init?(parsing data: Data) {
        self.init(JSONValue(parsing: data))
    }

    var id: String? { string("id") }
    /// `object`: the kind of object (`event`, `checkout.session`, `charge`, `list`, ...).
    var kind: String? { string("object") }

    func string(_ key: String) -> String? { json[key]?.string }
    func integer(_ key: String) -> Int64? {
        guard case .number(let text)? = json[key] else { return nil }
        return Int64(text)
    }
    func bool(_ key: String) -> Bool? {
        guard case .bool(let value)? = json[key] else { return nil }
        return value
    }
    func object(_ key: String) -> StripeObject? { StripeObject(json[key]) }
    /// An expandable field: the id Stripe writes, or the id of the object when it was expanded.
    func reference(_ key: String) -> String? { string(key) ?? object(key)?.id }
    /// A timestamp (Unix seconds).
    func date(_ key: String) -> Date? { integer(key).map { Date(timeIntervalSince1970: TimeInterval($0)) } }
    /// `metadata`'s string values.
    var metadata: [String: String] {
        (json["metadata"]?.object ?? [:]).compactMapValues(\.string)
    }

    /// A list object's `data`.
    var data: [StripeObject] { (json["data"]?.array ?? []).compactMap { StripeObject($0) } }
    /// A list object's `has_more`.
    var hasMore: Bool { bool("has_more") ?? false }
    /// A member that is a list object (`items`, `lines`, `refunds`): its `data`.
    func list(_ key: String) -> [StripeObject] { object(key)?.data ?? [] }

    /// Test mode is the sandbox; live mode production.
    var environment: StoreEnvironment? {
        bool("livemode").map { $0 ? .production : .sandbox }
    }
}
