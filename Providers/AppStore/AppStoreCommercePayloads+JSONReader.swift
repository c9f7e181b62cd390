import JSON

// The nested objects of a transaction read by hand with `JSONReader`, by the rules the top level
// follows (`JWSTransactionDecodedPayload+JSONReader.swift`): null as nil, a wrong type refused,
// the first of duplicate keys kept, unknown keys and enum values taken as they come.

extension JSONReader {
    /// Calls `member` once per distinct key of the object `value`, the first of duplicates; false
    /// for null; a value of another type is refused.
    func members(
        of value: Value, _ member: (String, Value) throws(JSONReaderError) -> Void
    ) throws(JSONReaderError) -> Bool {
        switch value {
        case .null:
            return false
        case .object(let container):
            var seen = Set<String>()
            try forEachField(of: container) { field throws(JSONReaderError) in
                let key = try string(field.key)
                guard seen.insert(key).inserted else { return }
                do throws(JSONReaderError) {
                    try member(key, field.value)
                } catch {
                    throw JSONReaderError(error.code, "\(key): \(error.message)", at: error.offset)
                }
            }
            return true
        default:
            throw .typeMismatch(expected: "object", found: value)
        }
    }

    /// The elements of the array `value`, each read by `element`; nil for null.
    func elements<Element>(
        of value: Value, _ element: (Value) throws(JSONReaderError) -> Element?
    ) throws(JSONReaderError) -> [Element]? {
        switch value {
        case .null:
            return nil
        case .array(let container):
            var elements: [Element] = []
            try forEachElement(of: container) { item throws(JSONReaderError) in
                // An array of a struct refuses a null element, as JSONDecoder does.
                guard let decoded = try element(item) else { throw .typeMismatch(expected: "object", found: item) }
                elements.append(decoded)
            }
            return elements
        default:
            throw .typeMismatch(expected: "array", found: value)
        }
    }
}

extension TransactionCommitmentInfo {
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        var decoded = Self()
        let present = try reader.members(of: value) { key, value throws(JSONReaderError) in
            switch key {
            case "billingPeriodNumber": decoded.billingPeriodNumber = try reader.int(value)
            case "commitmentExpiresDate": decoded.commitmentExpiresDate = try AppStoreDate(json: value, in: reader)
            case "commitmentPrice": decoded.commitmentPrice = try reader.int64(value)
            case "totalBillingPeriods": decoded.totalBillingPeriods = try reader.int(value)
            default: break
            }
        }
        guard present else { return nil }
        self = decoded
    }
}

extension AdvancedCommerceTransactionInfo {
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        var decoded = Self()
        let present = try reader.members(of: value) { key, value throws(JSONReaderError) in
            switch key {
            case "descriptors": decoded.descriptors = try AdvancedCommerceDescriptors(json: value, in: reader)
            case "estimatedTax": decoded.estimatedTax = try reader.int64(value)
            case "items":
                decoded.items = try reader.elements(of: value) { item throws(JSONReaderError) in
                    try AdvancedCommerceTransactionItem(json: item, in: reader)
                }
            case "period": decoded.period = try reader.string(value)
            case "requestReferenceId": decoded.requestReferenceId = try reader.string(value)
            case "taxCode": decoded.taxCode = try reader.string(value)
            case "taxExclusivePrice": decoded.taxExclusivePrice = try reader.int64(value)
            case "taxRate": decoded.taxRate = try reader.string(value)
            default: break
            }
        }
        guard present else { return nil }
        self = decoded
    }
}

extension AdvancedCommerceDescriptors {
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        var decoded = Self()
        let present = try reader.members(of: value) { key, value throws(JSONReaderError) in
            switch key {
            case "description": decoded.description = try reader.string(value)
            case "displayName": decoded.displayName = try reader.string(value)
            default: break
            }
        }
        guard present else { return nil }
        self = decoded
    }
}

extension AdvancedCommerceTransactionItem {
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        var decoded = Self()
        let present = try reader.members(of: value) { key, value throws(JSONReaderError) in
            switch key {
            case "SKU": decoded.SKU = try reader.string(value)
            case "description": decoded.description = try reader.string(value)
            case "displayName": decoded.displayName = try reader.string(value)
            case "offer": decoded.offer = try AdvancedCommerceOffer(json: value, in: reader)
            case "price": decoded.price = try reader.int64(value)
            case "refunds":
                decoded.refunds = try reader.elements(of: value) { refund throws(JSONReaderError) in
                    try AdvancedCommerceRefund(json: refund, in: reader)
                }
            case "revocationDate": decoded.revocationDate = try AppStoreDate(json: value, in: reader)
            default: break
            }
        }
        guard present else { return nil }
        self = decoded
    }
}

extension AdvancedCommerceOffer {
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        var decoded = Self()
        let present = try reader.members(of: value) { key, value throws(JSONReaderError) in
            switch key {
            case "period": decoded.period = try reader.string(value)
            case "periodCount": decoded.periodCount = try reader.int(value)
            case "price": decoded.price = try reader.int64(value)
            case "reason": decoded.reason = try reader.string(value)
            default: break
            }
        }
        guard present else { return nil }
        self = decoded
    }
}

extension AdvancedCommerceRefund {
    init?(json value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError) {
        var decoded = Self()
        let present = try reader.members(of: value) { key, value throws(JSONReaderError) in
            switch key {
            case "refundAmount": decoded.refundAmount = try reader.int64(value)
            case "refundDate": decoded.refundDate = try AppStoreDate(json: value, in: reader)
            case "refundReason": decoded.refundReason = try reader.string(value)
            case "refundType": decoded.refundType = try reader.string(value)
            default: break
            }
        }
        guard present else { return nil }
        self = decoded
    }
}
