import Foundation
import JSON
import ReceiptCore

extension NativeAPI {
    /// The fields stores declared beside `receipt` (a store's user id), read in the same pass as
    /// the body's own: the reader knows every such name from the start, and takes a store's own
    /// once the body has said which store it is. The values are checked by the verification
    /// pipeline like every other caller's (`EvidenceFieldCheck`).
    struct EvidenceFieldReading: Sendable {
        /// The body's own fields and every store's declared ones.
        let names: JSONFieldNames
        let declared: [String: [String]]

        init(stores: [StoreDeclaration]) {
            var declared: [String: [String]] = [:]
            var names = VerifyBody.CodingKeys.allCases.map(\.stringValue)
            for store in stores where !store.evidenceFields.isEmpty {
                declared[store.store.rawValue] = store.evidenceFields.map(\.name)
                names += store.evidenceFields.map(\.name).filter { !names.contains($0) }
            }
            self.names = JSONFieldNames(names)
            self.declared = declared
        }

        /// The store's declared fields present as strings; one that is not a string is refused.
        func read(_ fields: JSONBody.Fields, store: String) -> Result<[String: String], JSONBody.Problem> {
            var values: [String: String] = [:]
            for name in declared[store] ?? [] {
                do throws(JSONBody.Problem) {
                    if let value = try fields.string(FieldName(stringValue: name)) { values[name] = value }
                } catch {
                    return .failure(.init(code: .invalidField, message: "field '\(name)' must be a string"))
                }
            }
            return .success(values)
        }
    }

    /// A field named at run time, for `JSONBody.Fields`.
    private struct FieldName: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }
}
