import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    /// The purchase page's forms asking the store to revoke (with a refund), cancel or defer the
    /// subscription the purchase is a period of, for a store that takes such requests; empty otherwise.
    func subscriptionChangeSection(_ record: TransactionRecord, session: ConsoleSession) -> HTML {
        guard let registration = stores.first(where: { $0.store == record.store }),
            registration.subscriptionManager != nil,
            record.kind == .autoRenewableSubscription
        else { return "" }
        let name = registration.declaration.displayName
        let path = Self.purchasePath(record) + "/subscription"
        let refund: HTML = """
            <label>Refund <select name="refund"><option value="full">full</option><option value="prorated">prorated</option></select></label>
            """
        let days: HTML = """
            <label>Days <input name="days" type="number" min="\(SubscriptionChange.deferralDays.lowerBound)" max="\(SubscriptionChange.deferralDays.upperBound)" value="7"></label>
            """
        return """
            <h2>Subscription</h2>
            <p class="hint">Asks \(name) to change the subscription of \(record.originalOrSelf). The ledger changes when \(name)'s notification or read-back shows it.</p>
            \(ConsoleLayout.form(path + "/revoke", session: session, button: "Revoke with a refund", buttonID: "subscription-revoke", refund))
            \(ConsoleLayout.form(path + "/cancel", session: session, button: "Stop renewals", buttonID: "subscription-cancel"))
            \(ConsoleLayout.form(path + "/defer", session: session, button: "Defer the renewal", buttonID: "subscription-defer", days))
            """
    }

    /// Asks the store, once confirmed, and returns to the purchase saying what happened.
    func subscriptionChange(
        _ request: HTTPRequest, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        let store = request.pathParameters["store"] ?? "",
            transactionID = request.pathParameters["transaction_id"] ?? ""
        guard Identifier.problem(store) == nil, Identifier.problem(transactionID) == nil, let subscriptionChanges,
            let purchase = try await queries.purchase(store: store, transactionID: transactionID)
        else { return notFound(session, "No purchase \(transactionID) in \(store).") }
        let back = Self.purchasePath(purchase.record)
        let action = request.pathParameters["action"] ?? ""
        let change: SubscriptionChange
        switch action {
        case "revoke":
            guard let refund = RevocationRefund(rawValue: form.text("refund") ?? "full") else {
                return notFound(session, "No such refund.")
            }
            change = .revoke(refund: refund)
        case "cancel": change = .cancel
        case "defer":
            guard let days = form.text("days").flatMap(Int.init), SubscriptionChange.deferralDays.contains(days) else {
                return ConsoleLayout.page(
                    "Renewal not deferred", session: session, section: "Purchases",
                    error: "Days must be a whole number from 1 to 365.", status: 422,
                    "<h1>Renewal not deferred</h1><p><a href=\"\(back)\">Back to the purchase</a></p>")
            }
            change = .deferRenewal(days: days)
        default: return notFound(session, "No such change.")
        }
        guard form.confirmed else {
            var hidden: [(String, String)] = []
            if case .revoke(let refund) = change { hidden.append(("refund", refund.rawValue)) }
            if case .deferRenewal(let days) = change { hidden.append(("days", String(days))) }
            return ConsoleLayout.confirmation(
                "Confirm the change",
                question:
                    "Ask \(store) to \(SubscriptionChanges.describe(change)) for the subscription of \(transactionID)?",
                action: back + "/subscription/" + action, session: session, button: "Ask for it", hidden: hidden,
                cancel: back)
        }
        switch try await subscriptionChanges.change(
            change, store: store, transactionID: transactionID, who: session.label)
        {
        case .requested: return ConsoleLayout.redirect(back + "?subscription=requested")
        case .notFound: return notFound(session, "No purchase \(transactionID) in \(store).")
        case .notManageable(let why), .refused(let why):
            return ConsoleLayout.page(
                "Change not asked", session: session, section: "Purchases", error: "The store refused: \(why)",
                status: 422, "<h1>Change not asked</h1><p><a href=\"\(back)\">Back to the purchase</a></p>")
        }
    }

    /// What the redirect after a subscription change asked the purchase page to say.
    static func subscriptionChangeNotice(_ request: HTTPRequest) -> String? {
        request.query["subscription"] == "requested"
            ? "The store was asked to change the subscription; the purchase changes when the store's notification or read-back shows it."
            : nil
    }
}
