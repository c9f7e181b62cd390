import Foundation
import HTTPServer
import ReceiptCore

extension Console {
    func purchases(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let text = request.query["q"]?.trimmingCharacters(in: .whitespacesAndNewlines)
        let query = text?.isEmpty == false ? text : nil
        if let query, let problem = Identifier.problem(query) {
            return ConsoleLayout.page(
                "Purchases", session: session, section: "Purchases", error: "The search \(problem).", status: 400,
                "<h1>Purchases</h1>")
        }
        // One store's purchases only (a web shop's beside the apps'); a name no served store has shows all.
        let shown = stores.first { $0.store.rawValue == request.query["store"] }
        let served = stores.map(\.store.rawValue)
        var found = try await queries.purchases(
            matching: query, stores: served, only: shown.map { [$0.store.rawValue] })
        var note: String?
        if let query, found.isEmpty, shown == nil { (found, note) = try await purchasesByOrder(query) }
        let names = ClientNames(try await clients.list())
        let rows = found.map { purchase -> HTML in
            let record = purchase.record
            return """
                <tr><td><a href="\(Self.purchasePath(record))">\(ConsoleText.short(record.transactionID))</a></td><td class="store">\(record.store.rawValue)</td>
                <td class="environment">\(record.environment.rawValue)</td>
                <td class="product">\(record.productID)</td><td class="player">\(Self.playerLink(purchase.playerID))</td><td class="state">\(record.state.rawValue)</td>
                <td class="client">\(names.show(record.clientID))</td><td>\(ConsoleTime.show(record.firstVerifiedAt))</td></tr>
                """
        }
        let orders: HTML = query == nil ? try await ordersSection(store: shown?.store) : ""
        let caption =
            (query.map { "Purchases matching “\($0)”" } ?? "The latest purchases")
            + (shown.map { " in \($0.declaration.displayName)" } ?? "")
        return ConsoleLayout.page(
            "Purchases", session: session, section: "Purchases", notice: note,
            """
            <h1>Purchases</h1>
            <p class="hint">Search by transaction id, original transaction id, order id, player id, account token or account id (the box at the top of every page).</p>
            \(storeFilter(query: query, shown: shown?.store))
            \(ConsoleLayout.table(id: "purchases", caption: caption, headings: ["Transaction", "Store", "Environment", "Product", "Player", "State", "Client", "First verified"],
                                  rows: rows, empty: query == nil ? "No purchases yet." : "No purchase matches."))
            \(orders)
            """)
    }

    /// Links that show every store's purchases, or one store's, keeping the search.
    private func storeFilter(query: String?, shown: StoreID?) -> HTML {
        let search = query.map { "q=\(HTML.component($0))" }
        func link(_ store: StoreID?, _ name: String) -> HTML {
            let parameters = [search, store.map { "store=\(HTML.component($0.rawValue))" }].compactMap { $0 }
            let href = "/console/purchases" + (parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&"))
            return store == shown ? "<strong>\(name)</strong>" : "<a href=\"\(href)\">\(name)</a>"
        }
        var links: [HTML] = [link(nil, "All stores")]
        for store in stores { links += [" · ", link(store.store, store.declaration.displayName)] }
        return "<p class=\"filters\" id=\"store-filter\">Store: \(links)</p>"
    }

    /// The player's id, linking to their page (what they own).
    static func playerLink(_ playerID: String?) -> HTML {
        guard let playerID else { return "" }
        return "<a href=\"\(playerPath(playerID))\">\(playerID)</a>"
    }

    /// Asks each store that can look up orders, for each client with apps in it, until one knows
    /// the order; then shows the ledger's rows for the order's transactions.
    private func purchasesByOrder(_ orderID: String) async throws -> ([OperatorQueries.Purchase], String?) {
        let everyClient = try await clients.list().filter { !$0.disabled }
        for registration in stores {
            guard let lookup = registration.orderLookup else { continue }
            for client in everyClient.prefix(20) {
                let apps = Set(client.info.appIdentifiers(registration.declaration.identifiers))
                guard !apps.isEmpty else { continue }
                do {
                    let order = try await lookup.lookUpOrder(orderID, appIdentifiers: apps)
                    guard order.found else { continue }
                    let found = try await queries.purchases(
                        store: registration.store, transactionIDs: order.entries.compactMap(\.transactionID))
                    return (found, "Order \(orderID), found by \(registration.declaration.displayName)'s order lookup.")
                } catch {
                    logger.warning(
                        "console order lookup failed",
                        ["store": registration.store.rawValue, "client.id": client.clientID, "error": "\(error)"])
                }
            }
        }
        return ([], nil)
    }

    func purchase(_ request: HTTPRequest, _ session: ConsoleSession) async throws -> HTTPResponse {
        let store = request.pathParameters["store"] ?? "",
            transactionID = request.pathParameters["transaction_id"] ?? ""
        guard Identifier.problem(store) == nil, Identifier.problem(transactionID) == nil,
            let purchase = try await queries.purchase(store: store, transactionID: transactionID)
        else { return notFound(session, "No purchase \(transactionID) in \(store).") }
        let attempts = try await queries.attempts(of: purchase)
        let events = try await queries.events(of: purchase)
        let subscription = try await queries.subscription(of: purchase)
        let chain = subscription == nil ? [] : try await queries.chain(of: purchase)
        let names = ClientNames(try await clients.list())
        return ConsoleLayout.page(
            "Purchase \(transactionID)", session: session, section: "Purchases",
            notice: Self.redeliveryNotice(request) ?? Self.storeRefundNotice(request)
                ?? Self.subscriptionChangeNotice(request),
            """
            <h1>Purchase \(transactionID)</h1>
            \(Self.record(purchase, names: names))
            \(Self.purchaseLinks(purchase, names: names))
            \(Self.itemsSection(purchase.record))
            <h2>Claim</h2>\(Self.claimSection(purchase.record, attempts: attempts))
            \(try await refundSections(purchase, names: names))
            <h2>Verification attempts</h2>\(Self.attemptTable(attempts, claim: purchase.record.claim, names: names))
            <h2>Events and deliveries</h2>\(eventTable(events, session: session, id: "events", back: Self.purchasePath(purchase.record), names: names))
            \(subscription.map { Self.subscriptionSection($0, chain: chain) } ?? "")
            \(storeRefundSection(purchase.record, session: session))
            \(subscriptionChangeSection(purchase.record, session: session))
            """)
    }

    static func purchasePath(_ record: TransactionRecord) -> String {
        "/console/purchases/\(HTML.component(record.store.rawValue))/\(HTML.component(record.transactionID))"
    }

    private static func record(_ purchase: OperatorQueries.Purchase, names: ClientNames) -> HTML {
        let record = purchase.record
        let price = record.priceMilliunits.map { "\(Double($0) / 1000) \(record.currency ?? "")" } ?? ""
        return ConsoleLayout.details(
            id: "record",
            [
                ("Store", record.store.rawValue, nil), ("Environment", record.environment.rawValue, nil),
                ("Transaction id", record.transactionID, nil), ("Original transaction id", record.originalOrSelf, nil),
                ("Order id", record.orderID ?? "", nil), ("Product", record.productID ?? "", nil),
                ("Kind", record.kind?.rawValue ?? "", nil),
                ("Purchase option", record.purchaseOptionID ?? "", "record-purchase-option"),
                ("Quantity", record.quantity.map(String.init) ?? "", nil), ("Price", price, nil),
                ("Storefront", record.storefront ?? "", nil),
                ("State", record.state.rawValue, "record-state"),
                ("Purchased", ConsoleTime.show(record.purchaseDate), nil),
                ("Expires", ConsoleTime.show(record.expiresDate), nil),
                ("Revoked", ConsoleTime.show(record.revocationDate), nil),
                ("Revocation reason", record.revocationReason ?? "", nil),
                ("Refund", Self.refundText(record), "record-refund"),
                ("Offer", Self.offerText(record.offer), "record-offer"),
                ("Billing plan", Self.commitmentText(record.commitment), "record-commitment"),
                ("Ownership", record.ownership?.rawValue ?? "", nil),
                ("Account token", record.accountToken ?? "", nil), ("Player", purchase.playerID ?? "", "record-player"),
                (
                    "Client", names.names[record.clientID].map { "\($0) (\(record.clientID))" } ?? record.clientID,
                    "record-client"
                ), ("Game id", record.gameID.map(String.init) ?? "", nil),
                ("First verified", ConsoleTime.show(record.firstVerifiedAt), nil),
                ("Management id", String(record.managementID), nil),
            ])
    }

    /// Full or partial, with the share the store gave back; empty when nothing was refunded.
    private static func refundText(_ record: TransactionRecord) -> String {
        guard let refund = record.refund else { return "" }
        let kind = refund.isPartial(ofQuantity: record.quantity) ? "partial" : "full"
        let share = [
            refund.percentageMilliunits.map { "\(Double($0) / 1000) %" },
            refund.quantity.map { "\($0) of \(record.quantity.map(String.init) ?? "?")" },
            refund.storeType,
        ].compactMap { $0 }
        return share.isEmpty ? kind : "\(kind) (\(share.joined(separator: ", ")))"
    }

    /// Who claimed the purchase first, and every later claim made for another player (a shared receipt).
    private static func claimSection(_ record: TransactionRecord, attempts: [OperatorQueries.Attempt]) -> HTML {
        guard let claim = record.claim else {
            // Verified yet unclaimed: a period of a subscription presented for another player than its owner.
            let refused = LedgerRules.distinctPlayers(
                attempts.filter { $0.outcome == "verified" && $0.duplicate == true }.compactMap(\.playerID))
            let presented: HTML =
                refused.isEmpty
                ? ""
                : """
                 Presented for \(refused.joined(separator: ", ")): answered as a duplicate, since the subscription is another player's (claim conflict).
                """
            return
                "<p id=\"claim\">Not claimed: the store told us of this purchase, and no game has verified it for its owner yet.\(presented)</p>"
        }
        let conflicts = LedgerRules.distinctPlayers(
            attempts.filter { isConflict($0, claim: claim) }.compactMap(\.playerID))
        let summary = ConsoleLayout.details(
            id: "claim",
            [
                ("First claimed by", claim.claimant.playerID ?? "(no player id)", "claim-player"),
                ("Character", claim.claimant.characterID ?? "", nil),
                ("Server", claim.claimant.serverID ?? "", nil), ("Game version", claim.claimant.gameVersion ?? "", nil),
                ("Claimed", ConsoleTime.show(claim.claimedAt), nil),
                (
                    "Claim conflicts",
                    conflicts.isEmpty
                        ? "none" : "claim conflict: also presented for \(conflicts.joined(separator: ", "))",
                    "claim-conflicts"
                ),
            ])
        return summary
    }

    /// A verified duplicate made for another player than the first claim's (`LedgerRules.claim`).
    private static func isConflict(_ attempt: OperatorQueries.Attempt, claim: Claim?) -> Bool {
        guard attempt.outcome == "verified", attempt.duplicate == true else { return false }
        if case .conflict = LedgerRules.claim(of: claim, by: Claimant(playerID: attempt.playerID)) { return true }
        return false
    }

    private static func attemptTable(_ attempts: [OperatorQueries.Attempt], claim: Claim?, names: ClientNames) -> HTML {
        let rows = attempts.map { attempt -> HTML in
            let outcome =
                isConflict(attempt, claim: claim)
                ? "\(attempt.outcome) (duplicate, claim conflict)"
                : attempt.duplicate == true ? "\(attempt.outcome) (duplicate)" : attempt.outcome
            return """
                <tr><td>\(ConsoleTime.show(attempt.at))</td><td class="client">\(names.show(attempt.clientID))</td><td>\(ConsoleText.short(attempt.requestID))</td>
                <td class="player">\(attempt.playerID)</td><td class="outcome">\(outcome)</td><td class="reason">\(attempt.reason)</td><td>\(attempt.message)</td></tr>
                """
        }
        return ConsoleLayout.table(
            id: "attempts", caption: "Every verification attempt about this purchase, newest first",
            headings: ["When", "Client", "Request id", "Player", "Outcome", "Reason", "Message"], rows: rows,
            empty: "No attempts on record.")
    }

    /// Outbox messages, each failed one with its redeliver button, which brings the operator back to `back`.
    func eventTable(
        _ events: [OutboxRepository.Event], session: ConsoleSession, id: String, back: String, names: ClientNames
    ) -> HTML {
        let rows = events.map { event -> HTML in
            let failed = event.hasFailed
            let redeliver =
                failed || event.status == "delivered"
                ? ConsoleLayout.form(
                    "/console/deliveries/\(HTML.component(event.eventID))/redeliver", session: session,
                    button: "Redeliver",
                    hidden: [("back", back)])
                : HTML("")
            // The API's words: `pending` (tried again later after a failure: its attempts say so), `delivered`, `dead`.
            let status = event.status
            return """
                <tr><td class="event-id">\(ConsoleText.short(event.eventID))</td><td class="client">\(names.show(event.clientID))</td><td class="type">\(event.type)</td>
                <td>\(event.target)</td><td class="status">\(status)</td><td class="attempts">\(event.attempts)</td><td class="last-error">\(event.lastError)</td>
                <td>\(ConsoleTime.show(event.createdAt))</td><td>\(redeliver)</td></tr>
                """
        }
        return ConsoleLayout.table(
            id: id, caption: "Webhooks, callbacks, acknowledgements and mail, newest first",
            headings: ["Event", "Client", "Type", "Target", "Status", "Attempts", "Last error", "Created", ""],
            rows: rows,
            empty: "No events.")
    }

    private static func subscriptionSection(_ state: SubscriptionState, chain: [OperatorQueries.Purchase]) -> HTML {
        let summary = ConsoleLayout.details(
            id: "subscription-state",
            [
                ("Status", state.status.rawValue, "subscription-status"), ("Product", state.productID ?? "", nil),
                ("Expires", ConsoleTime.show(state.expiresDate), nil),
                ("Grace period until", ConsoleTime.show(state.gracePeriodExpiresDate), nil),
                ("Auto-renew", state.autoRenew.map { $0 ? "on" : "off" } ?? "", nil),
                ("Revoked", ConsoleTime.show(state.revocationDate), nil),
            ])
        let rows = chain.map { period -> HTML in
            """
            <tr><td><a href="\(purchasePath(period.record))">\(period.record.transactionID)</a></td><td>\(ConsoleTime.show(period.record.purchaseDate))</td>
            <td>\(ConsoleTime.show(period.record.expiresDate))</td><td>\(period.record.state.rawValue)</td></tr>
            """
        }
        return "<h2>Subscription</h2>\(summary)"
            + ConsoleLayout.table(
                id: "subscription", caption: "Its periods, oldest first",
                headings: ["Transaction", "Start", "End", "State"], rows: rows)
    }
}
