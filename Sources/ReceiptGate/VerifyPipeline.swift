import Crypto
public import Foundation
public import ReceiptCore

/// One verification, whatever API it came through: pick the store provider, prove the evidence,
/// cross-check product, app and environment, compare the account token, record exactly once.
public struct VerifyPipeline: Sendable {
    public struct Outcome: Sendable {
        public let transaction: LedgerTransaction
        public let duplicate: Bool
    }

    let providers: [String: any StoreProvider]
    let ledger: Ledger

    public init(providers: [any StoreProvider], ledger: Ledger) {
        self.providers = Dictionary(providers.map { ($0.store.rawValue, $0) }, uniquingKeysWith: { first, _ in first })
        self.ledger = ledger
    }

    public var stores: [String] { providers.keys.sorted() }

    /// Throws `StoreVerificationError` for every refusal; each attempt is recorded either way.
    public func verify(_ request: VerificationRequest, client: Client) async throws -> Outcome {
        let digest = SHA256.hex(Data(request.evidence.utf8))
        do {
            let outcome = try await verifyAndRecord(request, client: client, digest: digest)
            return outcome
        } catch let error as StoreVerificationError {
            await ledger.recordFailure(clientID: client.clientID, store: request.store.rawValue, requestID: request.requestID, playerID: request.playerID,
                                       evidenceDigest: digest, code: error.code.rawValue, reason: error.reason, message: error.message)
            throw error
        }
    }

    private func verifyAndRecord(_ request: VerificationRequest, client: Client, digest: String) async throws -> Outcome {
        guard let provider = providers[request.store.rawValue] else {
            throw StoreVerificationError(code: .invalidField, reason: "UNKNOWN_STORE",
                                         message: "store must be one of \(stores.joined(separator: ", ")), got \"\(request.store)\"")
        }
        let identifiers = provider.appIdentifiers(bundleIDs: client.bundleIDs, packageNames: client.packageNames)
        guard !identifiers.isEmpty else {
            throw StoreVerificationError(code: .bundleMismatch, reason: "NO_APP_REGISTERED",
                                         message: "this client has no app registered for \(request.store)")
        }
        let purchases = try await provider.verify(evidence: request.evidence,
                                                  context: VerificationContext(appIdentifiers: identifiers, environments: Set(client.environments),
                                                                               productID: request.productID))
        let purchase = try Self.choose(from: purchases, productID: request.productID)
        var context = Ledger.Context(client: client, requestID: request.requestID, evidenceDigest: digest)
        context.playerID = request.playerID
        context.characterID = request.characterID
        context.serverID = request.serverID
        var recorded = try await ledger.record(purchase, context: context)
        recorded.transaction.accountMatch = Self.accountMatch(requested: request.accountToken, evidence: recorded.transaction.appAccountToken)
        return Outcome(transaction: recorded.transaction, duplicate: recorded.duplicate)
    }

    /// The purchase the caller means: the one with its product id, else the most recent.
    static func choose(from purchases: [VerifiedPurchase], productID: String?) throws -> VerifiedPurchase {
        guard !purchases.isEmpty else {
            throw StoreVerificationError(code: .verificationFailed, reason: "NO_PURCHASE", message: "the evidence holds no purchase")
        }
        if let productID {
            guard let match = purchases.filter({ $0.productID == productID }).max(by: { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }) else {
                throw StoreVerificationError(code: .productMismatch, reason: "PRODUCT_MISMATCH",
                                             message: "the evidence is for \(purchases.compactMap(\.productID).joined(separator: ", ")), not \(productID)")
            }
            return match
        }
        return purchases.max { ($0.purchaseDate ?? .distantPast) < ($1.purchaseDate ?? .distantPast) }!
    }

    /// Compared, never ignored: `match`, `mismatch`, or `not_comparable` when either side is absent.
    static func accountMatch(requested: String?, evidence: String?) -> String {
        guard let requested, !requested.isEmpty, let evidence, !evidence.isEmpty else { return "not_comparable" }
        return requested.lowercased() == evidence.lowercased() ? "match" : "mismatch"
    }
}
