import Foundation

/// The cross-checks every verification applies, written once: the service's pipeline and the
/// plugin tests' fake core both call these, so a dialect test exercises the product's rules.
/// Before the store is asked: the evidence kind, the app the request may be for, the declared
/// evidence fields. After it proved purchases: which one the request means, its environment and
/// dates, the account token, and the purchases a claim may take.
package enum VerificationChecks {
    /// The client setting (`reject` or `record`) that decides what an account-token mismatch does.
    package static let accountMismatchSetting = "account_mismatch"

    /// What the store is asked with: the apps it may prove the evidence for (the client's
    /// registered ones, or the one the request names, which must be one of them) and the
    /// declared evidence fields, checked. Throws `StoreVerificationError`.
    package static func beforeTheStore(
        _ request: VerificationRequest, client: ClientInfo,
        declaration: StoreDeclaration
    ) throws -> (apps: Set<String>, evidenceFields: [String: String]) {
        guard declaration.evidenceKinds.contains(request.evidenceKind) else {
            throw StoreVerificationError(
                code: .invalidField, reason: "EVIDENCE_KIND_UNSUPPORTED",
                message: "\(request.store) evidence cannot be a bare \(request.evidenceKind.rawValue)")
        }
        var apps = Set(client.appIdentifiers(declaration.identifiers))
        if let requested = request.appIdentifier {
            guard apps.contains(requested) else {
                throw StoreVerificationError(
                    code: .bundleMismatch, reason: "APP_NOT_REGISTERED",
                    message: "\(requested) is not registered for this client")
            }
            apps = [requested]
        }
        guard !apps.isEmpty else {
            throw StoreVerificationError(
                code: .bundleMismatch, reason: "NO_APP_REGISTERED",
                message: "this client has no app registered for \(request.store)")
        }
        return (apps, try EvidenceFieldCheck.checked(request.evidenceFields, declared: declaration))
    }

    /// Refuses a purchase from an environment the client does not accept (checked again against
    /// the client as it is now when it changed while the request was being proven).
    package static func acceptsEnvironment(of purchase: VerifiedPurchase, client: ClientInfo) throws {
        try accepts(purchase.environment, accepted: Set(client.environments))
    }

    /// The one rule for environments, for every store: a purchase of an environment the client
    /// does not accept is refused, with one code and reason. Stores do not check it themselves; a
    /// store that can tell the environment before it asks (evidence that names it)
    /// asks this rule, so no call is made that could only be refused.
    package static func accepts(_ environment: StoreEnvironment, accepted: Set<StoreEnvironment>) throws {
        guard accepted.contains(environment) else {
            throw StoreVerificationError(
                code: .environmentMismatch, reason: "ENVIRONMENT_NOT_ALLOWED",
                message: "this client does not accept \(environment.rawValue) purchases")
        }
    }

    /// The purchase the request means among those the store proved, checked against the client:
    /// its environment accepted, its dates plausible, its account token compared (a mismatch
    /// refused when the client says so). `refusing` learns the transaction a refusal is about.
    package static func proven(
        _ purchases: [VerifiedPurchase], request: VerificationRequest, client: ClientInfo, evidenceDigest: String,
        refusing: (String) -> Void = { _ in }
    ) throws -> ProvenPurchase {
        if purchases.count == 1 { refusing(purchases[0].transactionID) }
        let purchase = try VerifiedPurchase.choose(
            from: purchases, productID: request.productID, transactionID: request.transactionID)
        refusing(purchase.transactionID)
        try acceptsEnvironment(of: purchase, client: client)
        if let problem = purchase.dateOutOfRange {
            throw StoreVerificationError(
                code: .verificationFailed, reason: "DATE_OUT_OF_RANGE",
                message: "the store's \(problem) is not a plausible date")
        }
        // Compared before anything is recorded, so every event of the record carries the real answer.
        let rejectsMismatch = client.setting(accountMismatchSetting) == "reject"
        var proven = ProvenPurchase(
            purchase: purchase, request: request,
            accountMatch: AccountMatch.compare(requested: request.accountToken, evidence: purchase.accountToken),
            evidenceDigest: evidenceDigest)
        if proven.accountMatch == .mismatch, rejectsMismatch {
            throw StoreVerificationError(
                code: .accountMismatch, reason: "ACCOUNT_MISMATCH",
                message: "the purchase was made for another account token than the one sent")
        }
        // The other purchases a claim may take pass the same checks, or are left for another request.
        proven.claimOrder = VerifiedPurchase.claimOrder(
            from: purchases, productID: request.productID, transactionID: request.transactionID
        )
        .filter { candidate in
            client.environments.contains(candidate.environment) && candidate.dateOutOfRange == nil
                && !(rejectsMismatch && proven.about(candidate).accountMatch == .mismatch)
        }
        return proven
    }
}
