import Foundation
import OpenSSLCrypto
import ReceiptCore

/// The `DialectCore` the service gives plugins and the native API: verification through the one
/// pipeline, ledger reads under the tenancy rule, and the state stores, all backed by Storage.
struct ServiceDialectCore: DialectCore {
    let pipeline: VerifyPipeline
    let clients: ClientRepository
    let directory: any ClientDirectory
    let transactions: TransactionRepository
    let rateLimiter: RateLimiter
    let tokens: any TokenStore
    let accounts: any AccountStore
    let replayGuard: any ReplayGuard
    let signer: any TokenSigner
    let now: @Sendable () -> Date

    /// Every store served, by store id.
    var stores: [StoreDeclaration] {
        pipeline.stores.values.map(\.declaration).sorted { $0.store.rawValue < $1.store.rawValue }
    }

    func declaration(of store: StoreID) -> StoreDeclaration? { pipeline.stores[store]?.declaration }

    /// The client with the version a write checks in its transaction: as the route's
    /// authentication read it when the info carries that read, else looked up. A client disabled
    /// or rotated since that read is refused by the write's version check.
    func current(_ info: ClientInfo) async throws -> ClientAtVersion {
        if let carried = info.carriedClient { return carried }
        guard let entry = try await directory.entry(for: info.clientID) else { throw Self.disabled }
        return entry.atVersion
    }

    private static let disabled = StoreVerificationError(
        code: .unauthorized, reason: "CLIENT_DISABLED", message: "client is disabled")

    func prove(_ request: VerificationRequest, client info: ClientInfo) async throws -> ProvenPurchase {
        try await pipeline.prove(request, client: try await current(info).client)
    }

    func record<T: Sendable>(
        _ proven: ProvenPurchase, client info: ClientInfo,
        effects: @escaping @Sendable (VerificationOutcome, any RecordScope) throws -> T
    ) async throws -> (VerificationOutcome, T) {
        let current = try await current(info)
        try await pipeline.claimForTheBuyer(proven, client: current.client, version: current.version)
        return try await pipeline.record(proven, client: current.client, version: current.version, effects: effects)
    }

    func record(_ proven: ProvenPurchase, client info: ClientInfo) async throws -> VerificationOutcome {
        let current = try await current(info)
        try await pipeline.claimForTheBuyer(proven, client: current.client, version: current.version)
        return try await pipeline.recordWithoutEffects(proven, client: current.client, version: current.version)
    }

    /// Whether `store` has its orders started here (`POST /v1/orders`).
    func startsOrders(_ store: StoreID) -> Bool { pipeline.stores[store]?.orderStarter != nil }

    /// Starts an order for the client with the store: recorded first, under an id of the
    /// service's, then opened with the store.
    func startOrder(
        _ request: OrderDraft, store: StoreID, client info: ClientInfo
    ) async throws -> (orderID: String, started: StartedOrder) {
        try await pipeline.startOrder(request, store: store, client: try await current(info).client)
    }

    /// Proves a player's store account from a store-issued ticket, for the client.
    func authenticate(
        ticket: String, identity: String?, store: StoreID, client info: ClientInfo
    ) async throws -> AuthenticatedAccount {
        try await pipeline.authenticate(
            ticket: ticket, identity: identity, store: store, client: try await current(info).client, now: now())
    }

    func authenticatesAccounts(_ store: StoreID) -> Bool { pipeline.stores[store]?.accountAuthenticator != nil }

    func lookUpOrder(
        _ orderID: String, store: StoreID, client info: ClientInfo
    ) async throws -> (order: StoreOrder, ledger: [String: LedgerPresence]) {
        guard let registration = pipeline.stores[store], let lookup = registration.orderLookup else {
            throw StoreVerificationError(
                code: .verifierError, reason: "NO_ORDER_LOOKUP", message: "\(store) cannot look up orders here")
        }
        let client = try await current(info).client
        let identifiers = Set(client.info.appIdentifiers(registration.declaration.identifiers))
        let order = try await lookup.lookUpOrder(orderID, appIdentifiers: identifiers)
        let ledger = try await transactions.presence(
            store: registration.store, transactionIDs: order.entries.compactMap(\.transactionID), client: client.info)
        return (order, ledger)
    }

    func transaction(store: StoreID, transactionID: String, client: ClientInfo) async throws -> TransactionRecord? {
        try await transactions.find(store: store, transactionID: transactionID, client: client)
    }

    func subscription(
        store: StoreID, originalTransactionID: String, client: ClientInfo
    ) async throws -> SubscriptionState? {
        try await transactions.subscription(store: store, original: originalTransactionID, client: client)?.0
    }

    func authenticateClient(id: String, secret: String) async throws -> ClientInfo? {
        guard id.utf8.count <= 64, secret.utf8.count <= 256 else { return nil }
        // With the version the secret belonged to, so that what is issued on the strength of it
        // can be refused if the client is rotated or disabled in between (TokenRequest.clientVersion).
        guard let remembered = try await directory.entry(for: id),
            ConstantTime.equals(Data(secret.utf8), Data(remembered.secret.utf8))
        else { return nil }
        // Memory may not have heard of a change yet, and what is issued checks the version it is
        // given: a good secret takes its version from the row as it is now (a settings change heard
        // late would otherwise refuse it). Only a secret that matched costs this read.
        guard let found = try await clients.authenticationEntry(for: id),
            ConstantTime.equals(Data(secret.utf8), Data(found.secret.utf8))
        else { return nil }
        var info = found.client.info
        info.version = found.version
        return info
    }

    func client(forAppIdentifier identifier: String, store: StoreID) async throws -> ClientInfo? {
        // No client registers what is no identifier (a NUL could not even be bound to the query).
        guard let kind = pipeline.stores[store]?.declaration.identifiers, Identifier.problem(identifier) == nil else {
            return nil
        }
        return try await clients.find(appIdentifier: identifier, kind: kind)?.info
    }

    func client(id: String) async throws -> ClientInfo? {
        guard id.utf8.count <= 64 else { return nil }
        return try await directory.entry(for: id)?.client.info
    }

    func checkRateLimit(_ policy: RateLimitPolicy, key: String) async throws {
        try await rateLimiter.check(policy, key: key)
    }

    func forgiveRateLimitHit(_ policy: RateLimitPolicy, key: String) async throws {
        try await rateLimiter.forgive(policy, key: key)
    }
}
