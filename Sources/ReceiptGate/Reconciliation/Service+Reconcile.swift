public import Foundation
public import ReceiptCore

/// What `receiptgate reconcile` ran: one record per poll, as the console lists them.
public struct ReconciliationReport: Encodable, Sendable {
    let runs: [PollRepository.Run]

    /// Some poll could not finish (its error says why; the next run resumes where it stopped).
    public var failed: Bool { runs.contains { $0.error != nil } }

    enum CodingKeys: String, CodingKey { case runs }
}

/// Nothing to reconcile for the store: it reads nothing back, or lacks the settings to.
public struct NothingToReconcile: Error, CustomStringConvertible {
    public let store: String
    public var description: String {
        "\(store) has nothing to read back: is it registered, with the credentials its reconciliation needs (docs/stores.md#reconciliation)?"
    }
}

extension Service {
    /// Runs each of `store`'s reconciliation polls once, now, in this process: the history from
    /// `since` (or the schedule's last day), and the read-back of quiet subscriptions (even when
    /// its schedule is off). Recorded as by-hand runs; the schedule's cursors are not moved.
    public func reconcile(store: StoreID, since: Date?) async throws -> ReconciliationReport {
        guard let registration = stores.first(where: { $0.store == store }) else {
            throw NothingToReconcile(store: store.rawValue)
        }
        var quiet = configuration.quietSubscriptions
        quiet.intervalSeconds = max(quiet.intervalSeconds, 1)
        let polls = StorePollRunner.polls(
            for: [registration], quiet: quiet, queries: QuietSubscriptionQueries(pool: database.pool))
        guard !polls.isEmpty else { throw NothingToReconcile(store: store.rawValue) }
        // A store's event that names its buyer is claimed here as by the service (straight from the database).
        let directory = DatabaseClientDirectory(repository: repositories.clients)
        let pipeline = VerifyPipeline(
            stores: stores, transactions: repositories.transactions, clients: repositories.clients,
            directory: directory, logger: logger)
        let runner = StorePollRunner(
            polls: PollRepository(pool: database.pool), clients: repositories.clients,
            intake: StoreNewsIntake(
                notifications: repositories.notifications,
                claims: StoreClaims(pipeline: pipeline, directory: directory, logger: logger)),
            logger: logger, now: now)
        var runs: [PollRepository.Run] = []
        for poll in polls {
            runs.append(try await runner.runByHand(poll.poller, registration: poll.registration, since: since))
        }
        return ReconciliationReport(runs: runs)
    }
}
