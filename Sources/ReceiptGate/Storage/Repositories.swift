import Foundation
import Postgres
import ReceiptCore

/// Every repository over one database: the only code that holds SQL (with the migrations).
public struct Repositories: Sendable {
    public let clients: ClientRepository
    public let transactions: TransactionRepository
    public let outbox: OutboxRepository
    public let notifications: NotificationRepository
    let tokens: TokenRepository
    let accounts: AccountRepository
    let replay: ReplayRepository
    let rateLimits: RateLimitRepository
    public let signingKeys: SigningKeyRepository

    /// For commands run beside the service (`client`, `webhooks`): no dialect renders anything there.
    public init(database: Database, secrets: SecretBox) {
        self.init(pool: database.pool, secrets: secrets, refundCallbacks: [:])
    }

    init(pool: PostgresPool, secrets: SecretBox, refundCallbacks: [String: any RefundCallbackRenderer]) {
        clients = ClientRepository(pool: pool, secrets: secrets)
        transactions = TransactionRepository(pool: pool, secrets: secrets)
        outbox = OutboxRepository(pool: pool, secrets: secrets)
        notifications = NotificationRepository(pool: pool, refundCallbacks: refundCallbacks)
        tokens = TokenRepository(pool: pool)
        accounts = AccountRepository(pool: pool)
        replay = ReplayRepository(pool: pool)
        rateLimits = RateLimitRepository(pool: pool)
        signingKeys = SigningKeyRepository(pool: pool, secrets: secrets)
    }

    /// Forgets what has expired: replay keys, rate-limit windows, long-dead tokens.
    func removeExpired() async throws {
        try await replay.removeExpired()
        try await rateLimits.removeExpired()
        try await tokens.removeExpired()
    }
}
