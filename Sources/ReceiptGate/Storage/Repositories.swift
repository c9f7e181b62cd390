import Foundation
import Postgres
import ReceiptCore

/// Every repository over one database: the only code that holds SQL (with the migrations).
public struct Repositories: Sendable {
    package let clients: ClientRepository
    package let transactions: TransactionRepository
    package let outbox: OutboxRepository
    package let notifications: NotificationRepository
    let tokens: TokenRepository
    let accounts: AccountRepository
    let replay: ReplayRepository
    let rateLimits: RateLimitRepository
    package let signingKeys: SigningKeyRepository
    public let catalog: ProductCatalogRepository

    /// For commands run beside the service (`client`, `webhooks`): no dialect renders anything there.
    package init(database: Database, secrets: SecretBox) {
        self.init(pool: database.pool, secrets: secrets, refundCallbacks: [:])
    }

    init(
        pool: PostgresPool, secrets: SecretBox, refundCallbacks: [String: any RefundCallbackRenderer],
        refundAnswerDelay: Double = 3600,
        readStandby: PostgresPool? = nil, now: @escaping @Sendable () -> Date = { Date() }
    ) {
        clients = ClientRepository(pool: pool, secrets: secrets, standby: readStandby)
        var transactions = TransactionRepository(pool: pool, secrets: secrets)
        transactions.now = now
        self.transactions = transactions
        outbox = OutboxRepository(pool: pool, secrets: secrets)
        notifications = NotificationRepository(
            pool: pool, refundCallbacks: refundCallbacks, refundAnswerDelay: refundAnswerDelay, now: now)
        tokens = TokenRepository(pool: pool)
        accounts = AccountRepository(pool: pool)
        replay = ReplayRepository(pool: pool)
        rateLimits = RateLimitRepository(pool: pool)
        catalog = ProductCatalogRepository(pool: pool)
        signingKeys = SigningKeyRepository(pool: pool, secrets: secrets)
    }

    /// Forgets what has expired: replay keys, rate-limit windows, long-dead tokens.
    func removeExpired() async throws {
        try await replay.removeExpired()
        try await rateLimits.removeExpired()
        try await tokens.removeExpired()
    }
}
