import Foundation
package import ReceiptCore

/// `TokenStore` in memory, with the same rules as the Postgres one (hash only, expiry,
/// single use on rotation, family revoked on reuse).
package final class MemoryTokenStore: TokenStore, @unchecked Sendable {
    private struct Entry { var stored: StoredToken; var spent = false; var revoked = false }
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]
    private var counter = 0
    private let clientVersions: MemoryClientVersions

    package init(clientVersions: MemoryClientVersions = MemoryClientVersions()) {
        self.clientVersions = clientVersions
    }

    /// How many tokens exist, and that none is kept in plain text.
    package var storedDigests: [String] { lock.withLock { Array(entries.keys) } }

    package func issue(_ request: TokenRequest) async throws -> IssuedToken {
        try lock.withLock {
            // As in Postgres: stored only while the client is enabled at the version that authenticated.
            if let version = request.clientVersion, clientVersions.current(request.clientID) != version {
                throw ClientChangedSinceAuthentication(clientID: request.clientID)
            }
            return issueLocked(request, family: UUID().uuidString)
        }
    }

    private func issueLocked(_ request: TokenRequest, family: String) -> IssuedToken {
        counter += 1
        let token = "mem_\(counter)_\(UUID().uuidString)"
        let stored = StoredToken(
            kind: request.kind, clientID: request.clientID, accountID: request.accountID, family: family,
            payload: request.payload, expiresAt: Date().addingTimeInterval(Double(request.lifetime.components.seconds)))
        entries[Self.digest(token)] = Entry(stored: stored)
        return IssuedToken(token: token, stored: stored)
    }

    package func resolve(_ token: String, kind: String) async throws -> StoredToken? {
        lock.withLock {
            guard let entry = entries[Self.digest(token)], Self.usable(entry, kind: kind) else { return nil }
            return entry.stored
        }
    }

    package func rotate(_ token: String, kind: String, lifetime: Duration) async throws -> TokenRotation {
        lock.withLock {
            let key = Self.digest(token)
            guard let entry = entries[key], entry.stored.kind == kind else { return .invalid }
            if entry.spent {
                for (other, value) in entries where value.stored.family == entry.stored.family {
                    entries[other]?.revoked = true
                }
                return .reused
            }
            guard Self.usable(entry, kind: kind) else { return .invalid }
            entries[key]?.spent = true
            let request = TokenRequest(
                kind: kind, clientID: entry.stored.clientID, accountID: entry.stored.accountID, lifetime: lifetime,
                payload: entry.stored.payload)
            return .rotated(issueLocked(request, family: entry.stored.family))
        }
    }

    package func consume(_ token: String, kind: String) async throws -> StoredToken? {
        lock.withLock {
            let key = Self.digest(token)
            guard let entry = entries[key], Self.usable(entry, kind: kind) else { return nil }
            entries[key]?.spent = true
            return entry.stored
        }
    }

    package func revokeFamily(_ family: String) async throws {
        lock.withLock {
            for (key, value) in entries where value.stored.family == family { entries[key]?.revoked = true }
        }
    }

    private static func usable(_ entry: Entry, kind: String) -> Bool {
        entry.stored.kind == kind && !entry.spent && !entry.revoked && entry.stored.expiresAt > Date()
    }

    /// Not cryptographic; what matters here is that the token itself is not the key.
    static func digest(_ token: String) -> String { String(token.reversed()) + "#" }
}

/// Each client's version as the fake core keeps it, like the `version` of a client row: moved on
/// by a rotation or disable, and checked by the token store against `TokenRequest.clientVersion`.
package final class MemoryClientVersions: @unchecked Sendable {
    private let lock = NSLock()
    private var versions: [String: Int64] = [:]
    private var disabled: Set<String> = []

    package init() {}

    /// Nil once the client is disabled; a client never changed is at version 1.
    package func current(_ clientID: String) -> Int64? {
        lock.withLock { disabled.contains(clientID) ? nil : versions[clientID, default: 1] }
    }

    package func change(_ clientID: String, disable: Bool = false) {
        lock.withLock {
            versions[clientID, default: 1] += 1
            if disable { disabled.insert(clientID) }
        }
    }
}

/// `AccountStore` in memory; links made through a record scope arrive only when it commits.
package final class MemoryAccountStore: AccountStore, @unchecked Sendable {
    private let lock = NSLock()
    private var accounts: [String: AccountRecord] = [:]
    private var links: [String: String] = [:]  // scope|store|original → account id

    package init() {}

    package func create(_ draft: AccountDraft) async throws -> AccountRecord {
        lock.withLock { insert(Self.make(draft)) }
    }

    @discardableResult
    func insert(_ account: AccountRecord) -> AccountRecord {
        accounts[account.id] = account
        return account
    }

    static func make(_ draft: AccountDraft) -> AccountRecord {
        AccountRecord(
            id: draft.id ?? "acc_" + UUID().uuidString.lowercased(), clientID: draft.client.clientID,
            scope: draft.client.scope,
            username: draft.username, appAccountToken: UUID().uuidString.lowercased(), email: draft.email,
            emailVerified: false, pendingEmail: nil, passwordHash: draft.passwordHash, attribution: draft.attribution,
            createdAt: Date())
    }

    package func account(id: String) async throws -> AccountRecord? { lock.withLock { accounts[id] } }

    package func account(username: String, scope: String) async throws -> AccountRecord? {
        lock.withLock { accounts.values.first { $0.scope == scope && $0.username == username } }
    }

    package func account(email: String, scope: String) async throws -> AccountRecord? {
        // A verified address first, as the Postgres store orders them: an unverified twin never shadows it.
        lock.withLock {
            accounts.values.filter { $0.scope == scope && $0.email?.lowercased() == email.lowercased() }
                .sorted { ($0.emailVerified ? 0 : 1, $0.createdAt) < ($1.emailVerified ? 0 : 1, $1.createdAt) }.first
        }
    }

    package func linkedAccount(_ key: PurchaseKey, scope: String) async throws -> AccountRecord? {
        lock.withLock { linkedLocked(key, scope: scope) }
    }

    func linkedLocked(_ key: PurchaseKey, scope: String) -> AccountRecord? {
        links[Self.linkKey(key, scope: scope)].flatMap { accounts[$0] }
    }

    package func links(accountID: String) async throws -> [PurchaseKey] {
        lock.withLock {
            links.filter { $0.value == accountID }.keys.sorted().map { key in
                let parts = key.split(separator: "|", maxSplits: 2).map(String.init)
                return PurchaseKey(store: StoreID(rawValue: parts[1]), originalTransactionID: parts[2])
            }
        }
    }

    struct ConfirmedAddressTaken: Error {}

    package func update(_ accountID: String, _ change: AccountChange) async throws -> AccountRecord? {
        try lock.withLock {
            guard var account = accounts[accountID] else { return nil }
            if let expected = change.expected,
                (account.email, account.emailVerified, account.pendingEmail, account.pendingEmailApproved)
                    != (expected.email, expected.emailVerified, expected.pendingEmail, expected.pendingEmailApproved)
            {
                return nil
            }
            if let email = change.email { account.email = email }
            if let verified = change.emailVerified { account.emailVerified = verified }
            if let pending = change.pendingEmail { account.pendingEmail = pending }
            if let approved = change.pendingEmailApproved { account.pendingEmailApproved = approved }
            if let hash = change.passwordHash { account.passwordHash = hash }
            // One account per game holds a confirmed address, as Postgres's unique index says.
            if account.emailVerified, let email = account.email?.lowercased(),
                accounts.values.contains(where: {
                    $0.id != accountID && $0.scope == account.scope && $0.emailVerified
                        && $0.email?.lowercased() == email
                })
            {
                throw ConfirmedAddressTaken()
            }
            accounts[accountID] = account
            return account
        }
    }

    static func linkKey(_ key: PurchaseKey, scope: String) -> String {
        "\(scope)|\(key.store.rawValue)|\(key.originalTransactionID)"
    }

    /// Applies what a committed record scope did; the first link of a purchase wins.
    func commit(_ scope: MemoryRecordScope) {
        lock.withLock {
            for account in scope.createdAccounts { accounts[account.id] = account }
            for (key, accountID) in scope.newLinks where links[key] == nil { links[key] = accountID }
            for (accountID, email) in scope.pendingEmails {
                accounts[accountID]?.pendingEmail = email
                accounts[accountID]?.pendingEmailApproved = false
            }
        }
    }

    func peekLink(_ key: String) -> String? { lock.withLock { links[key] } }
    func peekAccount(_ id: String) -> AccountRecord? { lock.withLock { accounts[id] } }
}

/// What a dialect does inside a record, kept aside until the record commits.
final class MemoryRecordScope: RecordScope {
    let client: ClientInfo
    let accounts: MemoryAccountStore
    var messages: [OutboxMessage] = []
    var createdAccounts: [AccountRecord] = []
    var newLinks: [(String, String)] = []
    var pendingEmails: [(String, String?)] = []
    let storesTakingAccountTokens: Set<StoreID>
    /// The purchases whose store was ever queued an account token (the core's unique index).
    let accountTokensQueued: Set<String>

    init(
        client: ClientInfo, accounts: MemoryAccountStore, storesTakingAccountTokens: Set<StoreID> = [],
        accountTokensQueued: Set<String> = []
    ) {
        self.client = client
        self.accounts = accounts
        self.storesTakingAccountTokens = storesTakingAccountTokens
        self.accountTokensQueued = accountTokensQueued
    }

    func enqueue(_ message: OutboxMessage) throws { messages.append(message) }

    func linkPurchase(_ key: PurchaseKey, to accountID: String) throws -> String {
        let scope =
            createdAccounts.first { $0.id == accountID }?.scope ?? accounts.peekAccount(accountID)?.scope
            ?? client.scope
        let linkKey = MemoryAccountStore.linkKey(key, scope: scope)
        if let existing = accounts.peekLink(linkKey) ?? newLinks.first(where: { $0.0 == linkKey })?.1 {
            return existing
        }
        newLinks.append((linkKey, accountID))
        return accountID
    }

    func linkedAccount(_ key: PurchaseKey) throws -> AccountRecord? {
        let linkKey = MemoryAccountStore.linkKey(key, scope: client.scope)
        guard let id = accounts.peekLink(linkKey) ?? newLinks.first(where: { $0.0 == linkKey })?.1 else { return nil }
        return accounts.peekAccount(id) ?? createdAccounts.first { $0.id == id }
    }

    func createAccount(_ draft: AccountDraft) throws -> AccountRecord {
        let account = MemoryAccountStore.make(draft)
        createdAccounts.append(account)
        return account
    }

    func setPendingEmail(_ email: String?, accountID: String) throws {
        pendingEmails.append((accountID, email))
    }

    /// As the core: only a store that can be told, only what the one rule says is owed, once per purchase.
    func tellStore(accountToken: String, for transaction: TransactionRecord) throws -> Bool {
        guard storesTakingAccountTokens.contains(transaction.store),
            let assignment = AccountTokenAssignment.owed(for: transaction, accountToken: accountToken)
        else { return false }
        let key = assignment.aggregateKey
        guard !accountTokensQueued.contains(key),
            !messages.contains(where: { $0.target == .storeAccountToken && $0.aggregateKey == key })
        else {
            return false
        }
        messages.append(
            OutboxMessage(
                clientID: assignment.clientID, target: .storeAccountToken, type: "store.account_token",
                aggregateKey: key,
                body: try JSONEncoder().encode(assignment)))
        return true
    }
}

package final class MemoryReplayGuard: ReplayGuard, @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String: Date] = [:]

    package init() {}

    package func firstSeen(_ key: String, window: Duration) async throws -> Bool {
        lock.withLock {
            let now = Date()
            if let until = seen[key], until > now { return false }
            seen[key] = now.addingTimeInterval(Double(window.components.seconds))
            return true
        }
    }
}
