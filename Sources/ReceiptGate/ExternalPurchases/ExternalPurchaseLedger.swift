import Foundation
import Postgres
import ReceiptCore

/// What a token's row owes its store now, decided under the row's lock and queued in the outbox
/// in the same transaction: the sale's lines once its web sale is in the ledger, a no-sale report
/// once its deadline passed with none, a refund's lines whenever the ledger refunded more of the
/// sale than was reported. Every report is fixed when queued, with a request identifier of its
/// own, so its retries send it unchanged.
enum ExternalPurchaseLedger {
    /// Moves token `id` as far as the ledger allows at `now`; returns the kinds of report queued.
    /// `noSaleStores`: the stores that want a report of a token without a sale.
    static func advance(
        _ id: Int64, now: Date, noSaleStores: Set<StoreID>, on connection: PostgresConnection
    ) throws -> [ExternalPurchaseReport.Kind] {
        guard
            let row = try connection.query(
                """
                SELECT id, client_id, store, environment, app_identifier, report_id, token, web_store, order_id, state,
                       report_by <= \(now) AS due, report_by > \(now.addingTimeInterval(-lateSaleWindow)) AS sale_looked_for,
                       refunded_share
                FROM external_purchase_tokens WHERE id = \(id) FOR UPDATE
                """
            ).first
        else { return [] }
        let token = Token(
            id: id, clientID: try row.decode("client_id"), store: StoreID(rawValue: try row.decode("store")),
            environment: try TransactionRows.typed(row, "environment", as: StoreEnvironment.self),
            appIdentifier: try row.decode("app_identifier"), reportID: try row.decode("report_id"),
            token: try row.decode("token"))
        var state: String = try row.decode("state")
        var queued: [ExternalPurchaseReport.Kind] = []
        // A waiting token's sale is reported once it reaches the ledger. So is the sale of a token
        // reported without one, when the sale came after (a web store's webhook late, a sale after
        // the deadline): a report of the token's transactions corrects the one that said none.
        let saleLookedFor: Bool = try row.decode("sale_looked_for")
        if state == "waiting" || (withoutSaleStates.contains(state) && saleLookedFor) {
            let sale = try saleLines(
                clientID: token.clientID, webStore: try row.decode("web_store"), orderID: try row.decode("order_id"),
                token: token.token, on: connection)
            if !sale.isEmpty {
                try queue(token, .sale, lines: sale.map(\.line), on: connection)
                try connection.execute(
                    """
                    UPDATE external_purchase_tokens SET state = 'sale_queued', sale_rows = \(sale.map { String($0.rowID) })::bigint[],
                        updated_at = now() WHERE id = \(id)
                    """)
                queued.append(.sale)
                state = "sale_queued"
            } else if state == "waiting", try row.decode("due", as: Bool.self), noSaleStores.contains(token.store) {
                // Compared by the database: the time as stored (to the microsecond) against the same.
                let kind: ExternalPurchaseReport.Kind = try isDuplicate(id, on: connection) ? .duplicate : .noSale
                try queue(token, kind, lines: [], on: connection)
                try connection.execute(
                    """
                    UPDATE external_purchase_tokens SET state = \(kind == .duplicate ? "duplicate_queued" : "no_sale_queued"),
                        updated_at = now() WHERE id = \(id)
                    """)
                queued.append(kind)
            }
        }
        if state == "sale_queued" || state == "reported" {
            let reported: Int = try row.decode("refunded_share")
            // Read again: the sale may have been tied just above.
            let rows =
                try connection.query(
                    "SELECT sale_rows::text[] AS sale_rows FROM external_purchase_tokens WHERE id = \(id)"
                ).first?.decode("sale_rows", as: [String]?.self)?.compactMap { Int64($0) } ?? []
            let refunds = try refundLines(rows: rows, reportedShare: reported, now: now, on: connection)
            if let share = refunds.share {
                try queue(token, .refund, lines: refunds.lines, on: connection)
                try connection.execute(
                    "UPDATE external_purchase_tokens SET refunded_share = \(share), updated_at = now() WHERE id = \(id)"
                )
                queued.append(.refund)
            }
            queued += try advanceRenewals(token, now: now, on: connection)
        }
        return queued
    }

    /// The states of a token reported, or on its way to be, as having no sale of its own, in the
    /// order `external_purchase_tokens_without_sale`'s predicate lists them (the sweep's statement
    /// names them so, as the index's list, for Postgres to read that index).
    static let withoutSaleStates = ["no_sale_queued", "reported_no_sale", "duplicate_queued", "reported_duplicate"]
    static let withoutSaleStatesSQL = withoutSaleStates.map { "'\($0)'" }.joined(separator: ", ")
    /// How long after a token's no-sale deadline (`report_by`) a sale of it is still looked for:
    /// a web store's late webhook or a sale after the deadline, not every token that never sold.
    static let lateSaleWindow: TimeInterval = 7 * 86_400

    /// A token its store issues once per customer, whose player registered another such token of
    /// the same app before it.
    static func isDuplicate(_ id: Int64, on connection: PostgresConnection) throws -> Bool {
        try connection.query(
            """
            SELECT EXISTS (
                SELECT 1 FROM external_purchase_tokens o
                WHERE o.client_id = e.client_id AND o.store = e.store AND o.environment = e.environment
                  AND o.app_identifier = e.app_identifier AND o.player_id = e.player_id AND o.once_per_player
                  AND o.id < e.id) AS duplicate
            FROM external_purchase_tokens e WHERE e.id = \(id) AND e.once_per_player AND e.player_id IS NOT NULL
            """
        ).first?.decode("duplicate", as: Bool.self) ?? false
    }

    struct Token {
        let id: Int64, clientID: String, store: StoreID, environment: StoreEnvironment, appIdentifier: String
        let reportID: String, token: String
    }

    /// Queues one report of `token` (a fresh request identifier, kept in the message).
    static func queue(
        _ token: Token, _ kind: ExternalPurchaseReport.Kind, lines: [ExternalPurchaseReport.Line],
        on connection: PostgresConnection
    ) throws {
        let report = ExternalPurchaseReport(
            store: token.store, environment: token.environment, clientID: token.clientID,
            appIdentifier: token.appIdentifier, tokenRowID: token.id, reportID: token.reportID, token: token.token,
            kind: kind, requestIdentifier: UUID().uuidString.lowercased(), lines: lines)
        try OutboxRepository.enqueue(
            OutboxMessage(
                clientID: token.clientID, target: .externalPurchaseReport, type: "external_purchase.report",
                aggregateKey: report.aggregateKey, body: try JSONEncoder.receiptGateStorage.encode(report)),
            on: connection)
    }

    /// The web sale a token names: the web store's order the game gave, or every ledger row that
    /// carries the token; only rows with a price (a line of a sale, not a refund's record).
    static func saleLines(
        clientID: String, webStore: String?, orderID: String?, token: String, on connection: PostgresConnection
    ) throws -> [(rowID: Int64, line: ExternalPurchaseReport.Line)] {
        try connection.query(
            """
            SELECT t.id, t.product_id, t.quantity, t.price_milliunits, t.paid_milliunits, t.tax_milliunits, t.currency, t.storefront,
                   COALESCE(t.purchase_date, t.first_verified_at) AS at,
                   t.product_kind IS NOT DISTINCT FROM 'auto_renewable_subscription' AS recurring
            FROM transactions t
            WHERE t.client_id = \(clientID) AND \(unescaped: ExternalPurchaseTokenRepository.pricedSQL)
              AND ((\(webStore)::text IS NOT NULL AND t.store = \(webStore) AND t.order_id = \(orderID))
                   OR t.external_purchase_token = \(token))
            ORDER BY t.id
            """
        ).map { row in
            var line = try saleLine(row)
            // A subscription's first period: no paid service before it.
            line.paidDaysBefore = line.recurring ? 0 : nil
            return (try row.decode("id", as: Int64.self), line)
        }
    }

    /// The refund lines owed for `rows` beyond `reportedShare` (thousandths of a percent), and the
    /// share they bring the token to; nil share when nothing more was refunded.
    static func refundLines(
        rows: [Int64], reportedShare: Int, now: Date, on connection: PostgresConnection
    ) throws -> (lines: [ExternalPurchaseReport.Line], share: Int?) {
        guard !rows.isEmpty else { return ([], nil) }
        let found = try connection.query(
            """
            SELECT t.id, t.product_id, t.quantity, t.price_milliunits, t.paid_milliunits, t.tax_milliunits, t.currency, t.storefront,
                   COALESCE(t.revocation_date, t.updated_at) AS at,
                   t.product_kind IS NOT DISTINCT FROM 'auto_renewable_subscription' AS recurring,
                   \(unescaped: ExternalPurchaseTokenRepository.refundedShareSQL) AS share
            FROM transactions t WHERE t.id = ANY (\(rows.map { String($0) })::bigint[]) ORDER BY t.id
            """)
        let share = min(100_000, try found.map { try $0.decode("share", as: Int.self) }.max() ?? 0)
        guard share > reportedShare else { return ([], nil) }
        let lines = try found.map { row in
            let id: Int64 = try row.decode("id")
            let (quantity, amount, tax) = try charged(row)
            // The refund takes its share of the tax with it. Each report refunds what the share
            // now refunded adds to what was reported, and what stays charged is the rest: the
            // refunds add up to the sale once all of it is refunded, whatever the rounding.
            func refunded(_ value: Int64) -> Int64 { portion(value, share) - portion(value, reportedShare) }
            func left(_ value: Int64) -> Int64 { value - portion(value, share) }
            var line = ExternalPurchaseReport.Line(
                lineID: lineID(id), productID: try row.decode("product_id"), quantity: quantity,
                amountMilliunits: refunded(amount), netMilliunits: left(amount),
                currency: try row.decode("currency"), taxCountry: try row.decode("storefront"),
                at: try row.decode("at"), refundsLineID: lineID(id), fullRefund: share >= 100_000,
                refundID: "\(lineID(id))-r\(share)")
            line.taxMilliunits = tax.map(refunded)
            line.netTaxMilliunits = tax.map(left)
            line.recurring = try row.decode("recurring")
            return line
        }
        return (lines, share)
    }

    /// A ledger row's line of a sale: all it charged (`id`, `product_id`, `quantity`,
    /// `price_milliunits`, `paid_milliunits`, `tax_milliunits`, `currency`, `storefront`, `at`,
    /// `recurring` selected).
    static func saleLine(_ row: PostgresRow) throws -> ExternalPurchaseReport.Line {
        let (quantity, amount, tax) = try charged(row)
        var line = ExternalPurchaseReport.Line(
            lineID: lineID(try row.decode("id")), productID: try row.decode("product_id"), quantity: quantity,
            amountMilliunits: amount, netMilliunits: amount, currency: try row.decode("currency"),
            taxCountry: try row.decode("storefront"), at: try row.decode("at"))
        line.taxMilliunits = tax
        line.netTaxMilliunits = tax
        line.recurring = try row.decode("recurring")
        return line
    }

    /// A row's quantity (at least one), what it charged for all of them and the tax within that,
    /// in milliunits: what the buyer paid when the web store said, else the price times the
    /// quantity; the tax when the web store said (never more than the amount), else nil.
    static func charged(_ row: PostgresRow) throws -> (quantity: Int, amount: Int64, tax: Int64?) {
        let quantity = max(1, try row.decode("quantity", as: Int?.self) ?? 1)
        let price = try row.decode("price_milliunits", as: Int64.self)
        let amount =
            try row.decode("paid_milliunits", as: Int64?.self)
            ?? price.multipliedReportingOverflow(by: Int64(quantity)).partialValue
        let tax = try row.decode("tax_milliunits", as: Int64?.self).map { min(max(0, $0), max(0, amount)) }
        return (quantity, amount, tax)
    }

    /// `share` (thousandths of a percent, at most all) of `value`, rounded toward zero; in full
    /// width, so no amount overflows on the way.
    static func portion(_ value: Int64, _ share: Int) -> Int64 {
        let share = Int64(min(max(0, share), 100_000))
        return Int64(100_000).dividingFullWidth(value.multipliedFullWidth(by: share)).quotient
    }

    /// A ledger row's line id in every report: stable, unique per app, and the id a refund refers to.
    static func lineID(_ rowID: Int64) -> String { "rg-\(rowID)" }
}
