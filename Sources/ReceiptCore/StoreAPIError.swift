/// A call to a store's server API that did not give what was asked, sorted by what the caller
/// must do differently. Every store client throws this one type: each store's table
/// (`Providers/<Store>/<Store>APIErrors.swift`) says which of its wire statuses and codes is which
/// kind, and names the reason and words the refusal is recorded under. What a kind answers (the
/// shared code, whether a retry can help) is decided here, once, for every store.
public struct StoreAPIError: StoreAskedToWait, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable, CaseIterable {
        /// The store does not know the evidence (unknown, expired, superseded, not owned). Final.
        case notFound
        /// The store refuses the evidence or the request's values (another app's token, another
        /// user's receipt, a page token it no longer takes). Final.
        case refused
        /// The store's signed answer does not carry the app's signature: a forgery. Final.
        case forged
        /// The store refuses our credentials (a key, a secret, a service account): the operator's to fix.
        case credentialsRefused
        /// No credentials to ask the store with: the operator's to fix.
        case notConfigured
        /// Rate limited, the store's server error, no answer, no time left: ask again later (not
        /// before `retryAfter`, when the store said).
        case unavailable
        /// An answer that cannot be read: it says nothing about the evidence, so asking again may help.
        case malformedAnswer
    }

    public let kind: Kind
    /// The store's name as an operator knows it, for messages.
    public let store: String
    /// The stable name the refusal is recorded and answered under ("PURCHASE_NOT_FOUND").
    public let reason: String
    /// What happened, as the caller reads it; never a secret, nor a URL that holds one.
    public let message: String
    /// The HTTP status the store answered, when it answered.
    public let status: Int?
    /// The store's own code for the failure (an error code in its answer's body), kept
    /// for logs and for the store's table.
    public let storeCode: String?
    /// How long the store asked to be left alone (its `Retry-After`), when it said.
    public var retryAfter: Duration?
    /// What the operator changes to fix refused or missing credentials (the settings to check).
    public let fix: String?

    public init(
        _ kind: Kind, store: String, reason: String, _ message: String, status: Int? = nil, storeCode: String? = nil,
        retryAfter: Duration? = nil, fix: String? = nil
    ) {
        self.kind = kind
        self.store = store
        self.reason = reason
        self.message = message
        self.status = status
        self.storeCode = storeCode
        self.retryAfter = retryAfter
        self.fix = fix
    }

    /// Whether asking again later may succeed: only the store's or the network's trouble.
    public var isRetryable: Bool { kind == .unavailable || kind == .malformedAnswer }

    /// The shared code a kind answers with: what the store said of the evidence is the evidence's
    /// refusal (VERIFICATION_FAILED); what stopped us asking is the verifier's (VERIFIER_ERROR).
    public var errorCode: ErrorCode {
        switch kind {
        case .notFound, .refused, .forged: .verificationFailed
        case .credentialsRefused, .notConfigured, .unavailable, .malformedAnswer: .verifierError
        }
    }

    /// As the pipeline's refusal.
    public var verificationError: StoreVerificationError {
        StoreVerificationError(code: errorCode, reason: reason, message: message, isRetryable: isRetryable)
    }

    /// What an operator should do about a failed scheduled read: refused or missing credentials
    /// name their settings; anything else waits for the next run, which resumes where this one stopped.
    public var operatorHelp: String {
        switch kind {
        case .credentialsRefused, .notConfigured:
            "\(self); \(fix ?? "check the credentials this store is asked with")"
        case .unavailable where status == 429:
            "rate limited by \(store); the next run resumes where this one stopped (\(self))"
        default:
            "\(self); the next run resumes where this one stopped"
        }
    }

    public var description: String {
        "\(kind)\(status.map { " (HTTP \($0))" } ?? "")\(storeCode.map { " (code \($0))" } ?? ""): \(message)"
    }
}
