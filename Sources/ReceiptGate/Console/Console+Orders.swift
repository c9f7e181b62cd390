import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    /// The newest orders started for stores whose purchases the service runs, on the purchases
    /// page: an order is not a purchase until a verification finishes it, so it is listed apart.
    func ordersSection(store: StoreID?) async throws -> HTML {
        guard stores.contains(where: { $0.orderStarter != nil && (store == nil || $0.store == store) }) else {
            return ""
        }
        let orders = try await OrderRepository(pool: database.pool).latest(store: store?.rawValue)
        let rows = orders.map { order -> HTML in
            let items = order.items.map { "\($0.quantity) × \($0.productID)" }.joined(separator: ", ")
            let state = order.closedReason.map { "\(order.state): \($0)" } ?? order.state
            return """
                <tr><td><a href="/console/purchases?q=\(HTML.component(order.orderID))">\(order.orderID)</a></td><td class="store">\(order.store)</td>
                <td class="player">\(Self.playerLink(order.playerID))</td><td>\(order.storeAccount)</td><td class="items">\(items) (\(order.currency))</td>
                <td class="state">\(state)</td><td>\(order.storeTransactionID ?? "")</td><td class="client">\(order.clientID)</td><td>\(ConsoleTime.show(order.createdAt))</td></tr>
                """
        }
        return """
            <h2>Orders</h2>
            <p class="hint">Orders the service started with a store (POST /v1/orders): started, finished by a verification, or closed (declined, failed).</p>
            \(ConsoleLayout.table(id: "orders", caption: "The latest orders", headings: ["Order", "Store", "Player", "Store account", "Items", "State", "Store transaction", "Client", "Started"],
                                  rows: rows, empty: "No orders yet."))
            """
    }
}
