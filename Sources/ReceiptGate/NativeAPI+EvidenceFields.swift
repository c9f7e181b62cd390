import Foundation
import ReceiptCore

extension NativeAPI {
    /// The body's fields a store declared beside `receipt` (a store's user id), as strings.
    /// Read only for a store that declares some, so the common body keeps its fast reader; the
    /// values are checked by the verification pipeline like every other caller's.
    static func evidenceFields(_ body: Data, declared store: StoreDeclaration) -> Result<[String: String], JSONBody.Problem> {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            return .failure(.init(code: .invalidField, message: "the body must be a JSON object"))
        }
        var fields: [String: String] = [:]
        for field in store.evidenceFields {
            switch object[field.name] {
            case nil, is NSNull: continue
            case let value as String: fields[field.name] = value
            default: return .failure(.init(code: .invalidField, message: "field '\(field.name)' must be a string"))
            }
        }
        return .success(fields)
    }
}
