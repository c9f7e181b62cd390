import Foundation
import ReceiptCore

/// A verify request body read field by field, so that every mistake is a 400 naming its field
/// (not a decoding error about the whole body). Types are checked strictly: a boolean or a
/// string is not taken for `requestType`.
struct HiveAxylBody {
    private enum Value: Decodable {
        case string(String), integer(Int), other, null

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() { self = .null; return }
            if let text = try? container.decode(String.self) { self = .string(text); return }
            // A boolean is not a number here, whatever the platform's JSON bridging does.
            if (try? container.decode(Bool.self)) != nil { self = .other; return }
            if let number = try? container.decode(Int.self) { self = .integer(number); return }
            self = .other
        }
    }

    private let fields: [String: Value]

    /// Nil when the body is not a JSON object.
    init?(_ data: Data) {
        guard let fields = try? JSONDecoder().decode([String: Value].self, from: data) else { return nil }
        self.fields = fields
    }

    /// Names of required fields that are absent, null or empty, in the order given.
    func missing(_ names: [String]) -> [String] {
        names.filter { name in
            switch fields[name] {
            case nil, .null: true
            case .string(let text): text.isEmpty
            default: false
            }
        }
    }

    /// A string field; absent or null gives nil. An integer is accepted where the contract's callers
    /// may send ids as numbers (`playerId`, `serverId`).
    func string(_ name: String, maxLength: Int, numbersAllowed: Bool = false) throws(HiveAxylResult) -> String? {
        switch fields[name] {
        case nil, .null: return nil
        case .string(let text):
            guard text.count <= maxLength else { throw .invalid("\(name) must be at most \(maxLength) characters") }
            return text
        case .integer(let number) where numbersAllowed: return String(number)
        default: throw .invalid("\(name) must be a string")
        }
    }

    func requiredString(_ name: String, maxLength: Int) throws(HiveAxylResult) -> String {
        guard let text = try string(name, maxLength: maxLength), !text.isEmpty else {
            throw .invalid("missing required field: \(name)")
        }
        return text
    }

    /// `requestType`: 1 (new purchase) or 2 (restore).
    func requestType() throws(HiveAxylResult) -> Int {
        guard case .integer(let value) = fields["requestType"], [1, 2].contains(value) else {
            throw .invalid("requestType must be 1 (new purchase) or 2 (restore)")
        }
        return value
    }

    /// `providerId`: which store the receipt is from, as the served stores' vendor codes say. One
    /// not served is a clear 400 naming those that are.
    func store(core: any DialectCore) throws(HiveAxylResult) -> StoreDeclaration {
        let provider = try requiredString("providerId", maxLength: 32)
        guard let store = core.store(forVendorCode: provider) else {
            let served = core.stores.map(\.vendorCode).joined(separator: ", ")
            throw .invalid(
                "providerId \(provider.prefix(32).uppercased()) is not served here; this server serves \(served)")
        }
        return store
    }

    /// The fields a store needs beside the receipt (`StoreDeclaration.evidenceFields`), sent
    /// in this dialect's camelCase (`store_user_id` is `storeUserId`); the OpenAPI part names them
    /// by this same rule.
    func evidenceFields(for store: StoreDeclaration) throws(HiveAxylResult) -> [String: String] {
        var found: [String: String] = [:]
        for field in store.evidenceFields {
            let name = Self.camelCase(field.name)
            if let value = try string(name, maxLength: field.maxLength, numbersAllowed: true), !value.isEmpty {
                found[field.name] = value
            } else if field.required {
                throw .invalid("\(name) is required with providerId \(store.vendorCode)")
            }
        }
        return found
    }

    static func camelCase(_ snake: String) -> String {
        let parts = snake.split(separator: "_")
        return (parts.first.map(String.init) ?? "")
            + parts.dropFirst().map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined()
    }
}
