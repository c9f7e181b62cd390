import Foundation
import JSON
import ReceiptCore

extension XsollaProvider {
    /// How long a webhook waits for the report: Xsolla gives up on a slow answer and sends again.
    static let readBackTimeout: Duration = .seconds(10)

    /// The transactions report's record of the transaction a payment or refund webhook names,
    /// read before the ledger moves: Xsolla's signature carries no time, so a genuine webhook
    /// sent again later (a replay) is believed only as far as the report still says it. nil when
    /// the client has no merchant id or API key (the webhook is then taken on its signature).
    /// Refused as retryable when the report cannot be read now, and when it does not list the
    /// transaction yet (the report may lag behind a fresh payment, and a signed payment answered
    /// as done would never come again): Xsolla sends again after a 5xx.
    func readBack(_ transactionID: String, owner: ClientWithStoreCredentials) async throws -> XsollaSale? {
        guard let access = try? Self.access(client: owner.client, credentials: owner.credentials) else { return nil }
        let records: [[String: JSONValue]]
        do {
            records = try await reports.transaction(
                transactionID, access: access, deadline: ContinuousClock.now.advanced(by: Self.readBackTimeout))
        } catch let error as StoreAPIError {
            logger.warning(
                "an Xsolla webhook waits: the transactions report could not be read",
                ["client.id": owner.client.clientID, "transaction": transactionID, "problem": error.message])
            throw NotificationRejection(
                .retryable, reason: "XSOLLA_REPORT_UNAVAILABLE",
                message: "the transaction could not be read back from Xsolla's report now")
        }
        guard let record = records.map(XsollaSale.init(report:)).first(where: { $0.transactionID == transactionID })
        else {
            throw NotificationRejection(
                .retryable, reason: "TRANSACTION_NOT_IN_REPORT",
                message: "Xsolla's transactions report does not list transaction \(transactionID) yet; send it again")
        }
        let projects = owner.client.appIdentifiers(Self.projectIDKind)
        if let project = record.projectID, !projects.contains(project) {
            throw NotificationRejection(
                .ignored, reason: "TRANSACTION_NOT_IN_REPORT",
                message:
                    "transaction \(transactionID) is Xsolla project \(project)'s, which this client did not register")
        }
        return record
    }

    /// Whether a report status says the money went back.
    static func isRevoked(_ status: String?) -> Bool { status == "refunded" || status == "canceled" }
}
