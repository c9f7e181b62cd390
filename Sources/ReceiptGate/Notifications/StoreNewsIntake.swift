import Foundation
import OpenSSLCrypto
import ReceiptCore

/// What a store tells, pushed or found by a poll, taken in one way. A signed event that names its
/// buyer (a web shop's paid order) is first that player's claim, recorded through the verification
/// pipeline exactly as a first verification is; then the notification is recorded once and its
/// event applied to the ledger. The claim goes first because it is idempotent: a store that sends
/// the notification again after a failed record claims nothing twice, while a notification on
/// record before its claim committed would be a duplicate whose claim never happened.
struct StoreNewsIntake: Sendable {
    let notifications: NotificationRepository
    /// nil where nothing can be claimed (a process without the verification pipeline).
    let claims: StoreClaims?

    func take(
        _ told: StoreNotification, rawBody: Data, kind: AppIdentifierKind?, requestID: String
    ) async throws -> NotificationRepository.Recorded {
        var notification = told
        // One client's notification is keyed by that client: an id its sender chose (an order
        // number in a signed body) never stands in for, or ahead of, another client's.
        if let clientID = told.clientID {
            notification = told.keyed(as: "\(clientID)/\(told.notificationID)")
        }
        // Only a buyer's purchase is claimed, and one on record already (a store's retry, a poll's
        // overlap, a replay) was claimed before it was recorded: nothing to ask or claim again.
        if let claims, notification.event.claimedBy != nil {
            if try await notifications.isRecorded(notification) {
                return NotificationRepository.Recorded(duplicate: true, changed: false)
            }
            try await claims.claim(notification, requestID: requestID)
        }
        return try await notifications.record(notification, rawBody: rawBody, kind: kind)
    }
}

/// A store event's buyer claiming its purchase, for the client the notification belongs to.
struct StoreClaims: Sendable {
    let pipeline: VerifyPipeline
    let directory: any ClientDirectory

    let logger: Logger

    /// A buyer's id the API would refuse leaves the purchase unclaimed (recorded, logged): the
    /// money was taken, and refusing the notification would lose the purchase.
    func claim(_ notification: StoreNotification, requestID: String) async throws {
        guard let player = notification.event.claimedBy, let purchase = notification.event.purchase else { return }
        if let problem = Identifier.problem(player) {
            logger.warning(
                "a store's purchase names a player id the API refuses; recorded unclaimed",
                [
                    "store": purchase.store.rawValue, "transaction.id": purchase.transactionID,
                    "problem": "the player id \(problem)",
                ])
            return
        }
        // A claim is always some client's: a store whose events name their buyer names the client too.
        guard let clientID = notification.clientID, let entry = try await directory.entry(for: clientID),
            entry.client.environments.contains(purchase.environment)
        else { return }
        var request = VerificationRequest(
            store: purchase.store, evidence: notification.notificationID, requestID: requestID)
        request.playerID = player
        let proven = ProvenPurchase(
            purchase: purchase, request: request, accountMatch: .notComparable,
            evidenceDigest: try SHA256.hex(Data(notification.notificationID.utf8)))
        do {
            _ = try await pipeline.recordWithoutEffects(proven, client: entry.client, version: entry.version)
        } catch let refusal as StoreVerificationError where !refusal.isRetryable {
            // Refused for good (another game redeemed it, the client was disabled meanwhile): on
            // the attempt record and in the log, as a verification's refusal is; the store's news
            // itself is still recorded.
            return
        }
    }
}
