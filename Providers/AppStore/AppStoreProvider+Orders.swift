import Foundation
public import ReceiptCore

extension AppStoreProvider: OrderLookingUp {
    /// Asks the App Store Server API (production, then sandbox) for the order, for each of the
    /// client's bundle ids, and proves each returned transaction before reading it.
    public func lookUpOrder(_ orderID: String, appIdentifiers: Set<String>) async throws -> StoreOrder {
        guard let configuration, configuration.serverAPIKey != nil else {
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_MISCONFIGURED",
                message: "order lookup needs the App Store Server API key (RECEIPTGATE_APPSTORE_API_*)")
        }
        let expectations = AppStoreExpectations(bundleIDs: appIdentifiers, environments: [.production, .sandbox])
        for bundle in appIdentifiers.sorted() {
            guard let client = configuration.serverAPIClient(bundleID: bundle, http: http, now: now) else { continue }
            for environment in [AppStoreEnvironment.production, .sandbox] {
                let answer: (valid: Bool, signedTransactions: [String])
                do {
                    answer = try await client.lookUpOrder(orderID, environment: environment)
                } catch {
                    switch error.kind {
                    case .unavailable:
                        throw StoreVerificationError(
                            code: .verifierError, reason: "STORE_UNAVAILABLE", message: error.message,
                            isRetryable: true)
                    case .malformedAnswer, .notConfigured:
                        // An answer that is not Apple's (garbage, a body that does not decode) says
                        // nothing about the order: reporting "not found" would be a guess.
                        throw StoreVerificationError(
                            code: .verifierError, reason: "STORE_INVALID_RESPONSE", message: error.message)
                    case .notFound, .refused, .forged, .credentialsRefused:
                        continue  // Apple's own error: not known for this bundle or environment
                    }
                }
                guard answer.valid, !answer.signedTransactions.isEmpty else { continue }
                let entries = answer.signedTransactions.map { signed -> StoreOrder.Entry in
                    guard let transaction = try? verifier.verifyTransaction(signed, expecting: expectations) else {
                        return .init(transactionID: nil, productID: nil, decodeFailed: true)
                    }
                    return .init(
                        transactionID: transaction.transactionId, productID: transaction.productId, decodeFailed: false)
                }
                return StoreOrder(found: true, environment: Self.storeEnvironment(environment), entries: entries)
            }
        }
        return StoreOrder(found: false, environment: nil, entries: [])
    }
}
