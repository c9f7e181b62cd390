import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    /// The purchase page's form asking the store to refund its order, for a store that takes
    /// such requests; empty otherwise.
    func storeRefundSection(_ record: TransactionRecord, session: ConsoleSession) -> HTML {
        guard let registration = stores.first(where: { $0.store == record.store }), registration.orderRefunder != nil,
            let orderID = record.orderID
        else { return "" }
        let name = registration.declaration.displayName
        return """
            <h2>Refund</h2>
            <p class="hint">Asks \(name) to refund the whole order \(orderID) (every item in it). The ledger changes when \(name)'s report says the refund happened.</p>
            \(ConsoleLayout.form(Self.purchasePath(record) + "/refund", session: session, button: "Ask \(name) to refund order", buttonID: "store-refund"))
            """
    }

    /// Asks the store, once confirmed, and returns to the purchase saying what happened.
    func storeRefund(
        _ request: HTTPRequest, _ form: ConsoleForm, _ session: ConsoleSession
    ) async throws -> HTTPResponse {
        let store = request.pathParameters["store"] ?? "",
            transactionID = request.pathParameters["transaction_id"] ?? ""
        guard Identifier.problem(store) == nil, Identifier.problem(transactionID) == nil, let orderRefunds,
            let purchase = try await queries.purchase(store: store, transactionID: transactionID)
        else { return notFound(session, "No purchase \(transactionID) in \(store).") }
        let back = Self.purchasePath(purchase.record)
        guard form.confirmed else {
            return ConsoleLayout.confirmation(
                "Confirm the refund",
                question:
                    "Ask \(store) to refund the whole order \(purchase.record.orderID ?? "") of \(transactionID)?",
                action: back + "/refund", session: session, button: "Ask for the refund", cancel: back)
        }
        switch try await orderRefunds.refund(store: store, transactionID: transactionID, who: session.label) {
        case .requested: return ConsoleLayout.redirect(back + "?refund=requested")
        case .notFound: return notFound(session, "No purchase \(transactionID) in \(store).")
        case .notRefundable(let why), .refused(let why):
            return ConsoleLayout.page(
                "Refund not asked", session: session, section: "Purchases", error: "The store refused: \(why)",
                status: 422, "<h1>Refund not asked</h1><p><a href=\"\(back)\">Back to the purchase</a></p>")
        }
    }

    /// What the redirect after a refund request asked the purchase page to say.
    static func storeRefundNotice(_ request: HTTPRequest) -> String? {
        request.query["refund"] == "requested"
            ? "The store was asked to refund the order; the purchase changes when its report says the refund happened."
            : nil
    }
}
