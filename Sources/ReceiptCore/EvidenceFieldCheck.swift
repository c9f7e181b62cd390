/// The fields beside a receipt that a store declared (`StoreDeclaration.evidenceFields`), checked
/// the same way whichever API they came through: required ones present, none too long or holding
/// control characters, and nothing the store did not declare passed on.
package enum EvidenceFieldCheck {
    package static func checked(_ given: [String: String], declared store: StoreDeclaration) throws -> [String: String]
    {
        var accepted: [String: String] = [:]
        for field in store.evidenceFields {
            guard let value = given[field.name], !value.isEmpty else {
                if field.required {
                    throw StoreVerificationError(
                        code: .missingFields, reason: "EVIDENCE_FIELD_MISSING",
                        message: "\(store.store) evidence needs \(field.name): \(field.description)")
                }
                continue
            }
            guard value.utf8.count <= field.maxLength,
                !value.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            else {
                throw StoreVerificationError(
                    code: .invalidField, reason: "EVIDENCE_FIELD_INVALID",
                    message: "\(field.name) must be at most \(field.maxLength) bytes without control characters")
            }
            accepted[field.name] = value
        }
        return accepted
    }
}
