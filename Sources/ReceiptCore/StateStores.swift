public import Foundation

// The state a dialect may keep, as protocols. ReceiptGate implements them on Postgres (shared by
// every process); plugin tests implement them in memory.

/// An opaque token as stored: only its SHA-256 is kept, never the token itself.
public struct StoredToken: Sendable, Equatable {
    /// What it is for (a dialect's access token, `refresh`, `email.confirm`...).
    public var kind: String
    public var clientID: String
    public var accountID: String?
    /// Tokens issued by rotation share a family; reuse of a rotated token revokes the family.
    public var family: String
    /// Small data the issuer attached (a pending e-mail address, say).
    public var payload: String?
    package var expiresAt: Date

    package init(kind: String, clientID: String, accountID: String?, family: String, payload: String?, expiresAt: Date)
    {
        self.kind = kind
        self.clientID = clientID
        self.accountID = accountID
        self.family = family
        self.payload = payload
        self.expiresAt = expiresAt
    }
}

/// A token just issued: the only time its plain value exists.
public struct IssuedToken: Sendable {
    public let token: String
    public let stored: StoredToken

    package init(token: String, stored: StoredToken) {
        self.token = token
        self.stored = stored
    }
}

public enum TokenRotation: Sendable {
    /// The old token is spent; here is its successor.
    case rotated(IssuedToken)
    /// The token had already been rotated: its whole family is now revoked.
    case reused
    /// Unknown, expired or revoked.
    case invalid
}

/// What a token is issued for.
public struct TokenRequest: Sendable {
    public var kind: String
    public var clientID: String
    public var accountID: String?
    public var lifetime: Duration
    public var payload: String?
    /// The client's version when its credentials were checked (`ClientInfo.version`). When set,
    /// the token is stored only if the client is still enabled at exactly this version, decided
    /// in the same step as the insert; otherwise `issue` throws `ClientChangedSinceAuthentication`.
    /// Without it, a token asked for with a secret that is rotated meanwhile would be stored after
    /// the rotation and outlive it.
    public var clientVersion: Int64?

    public init(
        kind: String, clientID: String, accountID: String? = nil, lifetime: Duration, payload: String? = nil,
        clientVersion: Int64? = nil
    ) {
        self.kind = kind
        self.clientID = clientID
        self.accountID = accountID
        self.lifetime = lifetime
        self.payload = payload
        self.clientVersion = clientVersion
    }
}

/// The client was rotated, disabled or otherwise changed after its credentials were checked:
/// nothing was issued. Answer it as the credentials being wrong.
public struct ClientChangedSinceAuthentication: Error, CustomStringConvertible {
    public let clientID: String
    package init(clientID: String) { self.clientID = clientID }
    public var description: String { "client \(clientID) changed since it authenticated" }
}

/// Opaque tokens with expiry and revocation, valid across processes. A client's tokens stop
/// working when its secret is rotated or it is disabled.
public protocol TokenStore: Sendable {
    func issue(_ request: TokenRequest) async throws -> IssuedToken
    /// The token if it is known, of this kind, unexpired, unrevoked and unspent; else nil.
    func resolve(_ token: String, kind: String) async throws -> StoredToken?
    /// Spends the token once and issues its successor in the same family.
    func rotate(_ token: String, kind: String, lifetime: Duration) async throws -> TokenRotation
    /// Spends a one-time token (an e-mail link): the first caller gets it, later ones nil.
    func consume(_ token: String, kind: String) async throws -> StoredToken?
    func revokeFamily(_ family: String) async throws
}

/// What identifies a purchase across renewals and restores: its store and original transaction.
public struct PurchaseKey: Sendable, Hashable {
    public var store: StoreID
    public var originalTransactionID: String

    public init(store: StoreID, originalTransactionID: String) {
        self.store = store
        self.originalTransactionID = originalTransactionID
    }
}

/// An end-user account of one game (or client), reached by receipt, token, or e-mail.
public struct AccountRecord: Sendable, Equatable {
    public var id: String
    public var clientID: String
    /// `ClientInfo.scope` of the client that created it: accounts belong to a game.
    public var scope: String
    public var username: String
    /// A UUID (lower case) the app sets as the store's account token at purchase time: a purchase
    /// carrying it was made for this account.
    public var appAccountToken: String
    public var email: String?
    public var emailVerified: Bool
    public var pendingEmail: String?
    /// The confirmed address approved the change to `pendingEmail` (an account with a confirmed
    /// address changes it only with both that approval and the new address's confirmation).
    public var pendingEmailApproved: Bool
    /// An opaque password hash (the dialect chooses the scheme), or nil.
    public var passwordHash: String?
    /// Attribution the app sent (JSON), kept for the game's marketing.
    public var attribution: Data?
    package var createdAt: Date

    package init(
        id: String, clientID: String, scope: String, username: String, appAccountToken: String, email: String?,
        emailVerified: Bool,
        pendingEmail: String?, pendingEmailApproved: Bool = false, passwordHash: String?, attribution: Data?,
        createdAt: Date
    ) {
        self.id = id
        self.clientID = clientID
        self.scope = scope
        self.username = username
        self.appAccountToken = appAccountToken
        self.email = email
        self.emailVerified = emailVerified
        self.pendingEmail = pendingEmail
        self.pendingEmailApproved = pendingEmailApproved
        self.passwordHash = passwordHash
        self.attribution = attribution
        self.createdAt = createdAt
    }
}

public struct AccountDraft: Sendable {
    /// Chosen by the caller when it must name the account before it exists (a mail link bound to
    /// it); nil lets the store choose.
    public var id: String?
    public var client: ClientInfo
    public var username: String
    public var email: String?
    public var passwordHash: String?
    public var attribution: Data?

    public init(
        id: String? = nil, client: ClientInfo, username: String, email: String? = nil, passwordHash: String? = nil,
        attribution: Data? = nil
    ) {
        self.id = id
        self.client = client
        self.username = username
        self.email = email
        self.passwordHash = passwordHash
        self.attribution = attribution
    }
}

/// A change to an account; nil leaves a field as it is.
public struct AccountChange: Sendable {
    public var email: String?
    public var emailVerified: Bool?
    /// `.some(nil)` clears the pending address.
    public var pendingEmail: String??
    public var pendingEmailApproved: Bool?
    public var passwordHash: String?
    /// When set, the change applies only if the account's address fields (e-mail, confirmed,
    /// pending, approved) are still what this record says: a decision made on a read is not
    /// written over a change made meanwhile.
    public var expected: AccountRecord?

    public init(
        email: String? = nil, emailVerified: Bool? = nil, pendingEmail: String?? = nil,
        pendingEmailApproved: Bool? = nil,
        passwordHash: String? = nil, expected: AccountRecord? = nil
    ) {
        self.email = email
        self.emailVerified = emailVerified
        self.pendingEmail = pendingEmail
        self.pendingEmailApproved = pendingEmailApproved
        self.passwordHash = passwordHash
        self.expected = expected
    }
}

public protocol AccountStore: Sendable {
    func create(_ draft: AccountDraft) async throws -> AccountRecord
    func account(id: String) async throws -> AccountRecord?
    func account(username: String, scope: String) async throws -> AccountRecord?
    func account(email: String, scope: String) async throws -> AccountRecord?
    func linkedAccount(_ key: PurchaseKey, scope: String) async throws -> AccountRecord?
    /// The purchases linked to an account.
    func links(accountID: String) async throws -> [PurchaseKey]
    func update(_ accountID: String, _ change: AccountChange) async throws -> AccountRecord?
}

/// Remembers what was seen, across processes, for a while.
public protocol ReplayGuard: Sendable {
    /// True the first time `key` is seen within `window`; false after.
    func firstSeen(_ key: String, window: Duration) async throws -> Bool
}
