import Foundation
public import ReceiptCore

extension AmazonAppstoreProvider {
    /// The evidence is the receipt id; the Amazon user id comes beside it (`amazon_user_id`, an
    /// evidence field this store declares). The app is the one the caller named, which the core
    /// has already narrowed `context.appIdentifiers` to. Throws `StoreVerificationError`.
    public func verify(evidence: String, context: VerificationContext) async throws -> [VerifiedPurchase] {
        guard let userID = context.evidenceFields[Self.userIDField.name], !userID.isEmpty else {
            throw StoreVerificationError(
                code: .missingFields, reason: "EVIDENCE_FIELD_MISSING",
                message: "Amazon Appstore evidence needs \(Self.userIDField.name) beside the receipt id")
        }
        return try await verify(receiptID: evidence, userID: userID, context: context)
    }

    /// Proves one receipt with RVS, for `userID`, with the client's shared secret
    /// (`context.credentials[Setting.sharedSecret]`), in the environments the client accepts:
    /// production only, the Cloud Sandbox only, or production and then the sandbox when
    /// production does not know the receipt. `packageName` is the app the caller names, if any.
    /// Throws `StoreVerificationError`.
    public func verify(
        receiptID: String, userID: String, packageName: String? = nil,
        context: VerificationContext
    ) async throws -> [VerifiedPurchase] {
        for (name, value) in [("receipt", receiptID), ("amazon_user_id", userID)]
        where value.isEmpty || value.utf8.count > 2048 {
            throw StoreVerificationError(
                code: .invalidField, reason: "INVALID_FIELD", message: "\(name) must be 1 to 2048 bytes")
        }
        let package = try Self.packageName(packageName, registered: context.appIdentifiers)
        let purchase: VerifiedPurchase
        do {
            let secret = try Self.sharedSecret(context.credentials)
            purchase = try await lookUp(
                receiptID: receiptID, userID: userID, secret: secret, environments: context.environments,
                package: package, deadline: context.deadline)
        } catch {
            if error.kind == .credentialsRefused || error.kind == .notConfigured {
                logger.error(
                    "Amazon RVS cannot be asked for this client; the operator must set its shared secret",
                    ["client.id": context.client?.clientID ?? "", "problem": error.message])
            }
            throw error.verificationError
        }
        return [purchase]
    }

    /// The receipt from RVS in the environments given, production first; the sandbox is asked
    /// only when production does not know the receipt (400), never after any other answer.
    func lookUp(
        receiptID: String, userID: String, secret: String, environments: Set<StoreEnvironment>, package: String?,
        deadline: ContinuousClock.Instant?
    ) async throws(StoreAPIError) -> VerifiedPurchase {
        let order = [false, true].filter { environments.contains($0 ? .sandbox : .production) }
        guard !order.isEmpty else { throw AmazonAPIErrors.notConfigured("this client accepts no environment") }
        for (index, sandbox) in order.enumerated() {
            do {
                let body = try await rvs.verify(
                    receiptID: receiptID, userID: userID, secret: secret, sandbox: sandbox, deadline: deadline)
                return try RVSReceipt.decode(body).normalized(
                    requestedReceiptID: receiptID, userID: userID, sandboxAnswered: sandbox,
                    package: package, now: now())
            } catch  where error.kind == .notFound && index + 1 < order.count {
                continue
            }
        }
        throw AmazonAPIErrors.unknownReceipt
    }

    /// RVS's answer (version 1.0) names no app: a shared secret is the developer account's, for
    /// all its apps, so RVS cannot say which of them sold the receipt. The app recorded is the one
    /// the caller names (one of the client's), else the client's only Amazon package; with several
    /// and none named, nil (the product id is what ties the purchase to a game then: Amazon SKUs
    /// are unique within a developer account).
    static func packageName(_ named: String?, registered: Set<String>) throws -> String? {
        if let named {
            guard registered.contains(named) else {
                throw StoreVerificationError(
                    code: .bundleMismatch, reason: "PACKAGE_MISMATCH",
                    message: "\(named) is not an Amazon package of this client")
            }
            return named
        }
        return registered.count == 1 ? registered.first : nil
    }
}
