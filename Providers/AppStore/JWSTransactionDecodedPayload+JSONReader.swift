import Foundation
import JSON

/// The StoreKit 2 transaction is decoded on every verification: by hand, with `JSONReader`, by
/// the rules JSONDecoder would follow for these optional fields (DifferentialPayloadTests hold
/// it to a reference decoding of the same bytes, made in the tests): null as nil, a wrong type refused,
/// the first of duplicate keys kept, unknown keys and enum values taken as they come.
extension JWSTransactionDecodedPayload {
    /// The stored properties, named as their keys.
    private enum Field: String, CaseIterable {
        case originalTransactionId, transactionId, webOrderLineItemId, bundleId, productId, subscriptionGroupIdentifier
        case purchaseDate, originalPurchaseDate, expiresDate, quantity, type, appAccountToken, inAppOwnershipType,
            signedDate
        case revocationReason, revocationDate, isUpgraded, offerType, offerIdentifier, environment, storefront,
            storefrontId
        case transactionReason, currency, price, offerDiscountType, appTransactionId, offerPeriod, revocationType,
            revocationPercentage
        case advancedCommerceInfo, billingPlanType, commitmentInfo
    }

    private static let fields = Field.allCases
    private static let fieldNames = JSONFieldNames(Field.allCases.map(\.rawValue))

    init(jsonPayload payload: Data) throws(JSONReaderError) {
        var decoded = JWSTransactionDecodedPayload()
        try JSONReader.withDocument(payload, grammar: .jsonDecoder) { reader throws(JSONReaderError) in
            var seen: UInt64 = 0
            let top = try reader.readDocument { member throws(JSONReaderError) in
                guard let index = try Self.fieldNames.index(of: member.key, in: reader), seen & (1 << index) == 0 else {
                    return
                }
                seen |= 1 << index
                do throws(JSONReaderError) {
                    try decoded.read(Self.fields[index], member.value, in: reader)
                } catch {
                    throw JSONReaderError(
                        // names the field
                        error.code, "\(Self.fields[index].rawValue): \(error.message)", at: error.offset)
                }
            }
            guard case .object = top else { throw .typeMismatch(expected: "object", found: top) }
        }
        self = decoded
    }

    private mutating func read(_ field: Field, _ value: JSONReader.Value, in reader: JSONReader) throws(JSONReaderError)
    {
        switch field {
        case .originalTransactionId: originalTransactionId = try reader.string(value)
        case .transactionId: transactionId = try reader.string(value)
        case .webOrderLineItemId: webOrderLineItemId = try reader.string(value)
        case .bundleId: bundleId = try reader.string(value)
        case .productId: productId = try reader.string(value)
        case .subscriptionGroupIdentifier: subscriptionGroupIdentifier = try reader.string(value)
        case .purchaseDate: purchaseDate = try AppStoreDate(json: value, in: reader)
        case .originalPurchaseDate: originalPurchaseDate = try AppStoreDate(json: value, in: reader)
        case .expiresDate: expiresDate = try AppStoreDate(json: value, in: reader)
        case .quantity: quantity = try reader.int(value)
        case .type: type = try TransactionType(json: value, in: reader)
        case .appAccountToken: appAccountToken = try reader.string(value)
        case .inAppOwnershipType: inAppOwnershipType = try InAppOwnershipType(json: value, in: reader)
        case .signedDate: signedDate = try AppStoreDate(json: value, in: reader)
        case .revocationReason: revocationReason = try RevocationReason(json: value, in: reader)
        case .revocationDate: revocationDate = try AppStoreDate(json: value, in: reader)
        case .isUpgraded: isUpgraded = try reader.bool(value)
        case .offerType: offerType = try OfferType(json: value, in: reader)
        case .offerIdentifier: offerIdentifier = try reader.string(value)
        case .environment: environment = try AppStoreEnvironment(json: value, in: reader)
        case .storefront: storefront = try reader.string(value)
        case .storefrontId: storefrontId = try reader.string(value)
        case .transactionReason: transactionReason = try TransactionReason(json: value, in: reader)
        case .currency: currency = try reader.string(value)
        case .price: price = try reader.int64(value)
        case .offerDiscountType: offerDiscountType = try OfferDiscountType(json: value, in: reader)
        case .appTransactionId: appTransactionId = try reader.string(value)
        case .offerPeriod: offerPeriod = try reader.string(value)
        case .revocationType: revocationType = try RevocationType(json: value, in: reader)
        case .revocationPercentage: revocationPercentage = try reader.int(value)
        case .advancedCommerceInfo: advancedCommerceInfo = try AdvancedCommerceTransactionInfo(json: value, in: reader)
        case .billingPlanType: billingPlanType = try BillingPlanType(json: value, in: reader)
        case .commitmentInfo: commitmentInfo = try TransactionCommitmentInfo(json: value, in: reader)
        }
    }
}
