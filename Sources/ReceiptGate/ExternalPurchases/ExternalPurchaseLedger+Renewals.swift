import Foundation
import JSON
import Postgres
import ReceiptCore

/// A subscription sold through a token goes on renewing on the web store, and each renewal is a
/// sale the store wants reported under the same token (each store's provider words it: a renewal
/// line item, or a transaction naming the first one). The periods are the ledger's rows of the
/// same subscription (one original transaction) after the sale's own.
extension ExternalPurchaseLedger {
    /// Queues a report of each later paid period of the sale's subscriptions not reported yet, and
    /// of each reported period's refunds beyond what was reported of them.
    static func advanceRenewals(
        _ token: Token, now: Date, on connection: PostgresConnection
    ) throws -> [ExternalPurchaseReport.Kind] {
        guard
            let row = try connection.query(
                """
                SELECT sale_rows::text[] AS sale_rows, renewal_rows::text[] AS renewal_rows,
                       renewal_refunded::text AS renewal_refunded
                FROM external_purchase_tokens WHERE id = \(token.id)
                """
            ).first
        else { return [] }
        let saleRows = try ids(row.decode("sale_rows", as: [String]?.self))
        var reported = Set(try ids(row.decode("renewal_rows", as: [String]?.self)))
        guard let first = saleRows.min() else { return [] }
        var queued: [ExternalPurchaseReport.Kind] = []
        for period in try periods(after: saleRows, on: connection) where !reported.contains(period.rowID) {
            var line = period.line
            line.saleLineID = lineID(first)
            try queue(token, .renewal, lines: [line], on: connection)
            try connection.execute(
                """
                UPDATE external_purchase_tokens SET renewal_rows = array_append(renewal_rows, \(period.rowID)::bigint),
                    updated_at = now() WHERE id = \(token.id)
                """)
            reported.insert(period.rowID)
            queued.append(.renewal)
        }
        let shares = shareMap(try row.decode("renewal_refunded", as: String.self))
        for rowID in reported.sorted() {
            let refunds = try refundLines(rows: [rowID], reportedShare: shares[rowID] ?? 0, now: now, on: connection)
            guard let share = refunds.share else { continue }
            try queue(token, .refund, lines: refunds.lines, on: connection)
            try connection.execute(
                """
                UPDATE external_purchase_tokens
                SET renewal_refunded = renewal_refunded || jsonb_build_object(\(String(rowID))::text, \(share)::int), updated_at = now()
                WHERE id = \(token.id)
                """)
            queued.append(.refund)
        }
        return queued
    }

    /// Every paid period of the subscriptions among `saleRows`, after the sale's own, in the order
    /// they were bought; each naming its own subscription's first period (the sale's row of it),
    /// with the days of paid service before it in that subscription (free periods count none) and
    /// whether its product is another than the period's before it, and taxed where the sale was
    /// when the web store did not say otherwise.
    static func periods(
        after saleRows: [Int64], on connection: PostgresConnection
    ) throws -> [(rowID: Int64, line: ExternalPurchaseReport.Line)] {
        let rows = try connection.query(
            """
            SELECT r.id, r.product_id, r.quantity, r.price_milliunits, r.paid_milliunits, r.tax_milliunits, r.currency, COALESCE(r.storefront, s.storefront) AS storefront,
                   COALESCE(r.purchase_date, r.first_verified_at) AS at, true AS recurring, r.id = ANY (\(saleRows.map { String($0) })::bigint[]) AS sold,
                   s.id AS start_id,
                   CASE WHEN r.price_milliunits > 0 AND r.expires_date > r.purchase_date
                        THEN round(extract(epoch FROM r.expires_date - r.purchase_date) / 86400)::int ELSE 0 END AS paid_days
            FROM transactions s
            JOIN transactions r ON r.store = s.store AND r.original_transaction_id = s.original_transaction_id
                AND r.client_id = s.client_id
            WHERE s.id = ANY (\(saleRows.map { String($0) })::bigint[]) AND s.product_kind = 'auto_renewable_subscription'
              AND r.price_milliunits IS NOT NULL AND r.currency IS NOT NULL
            ORDER BY at, r.id
            """)
        // Per subscription (its first period's row): the paid days so far and the last product.
        var paidDays: [Int64: Int] = [:]
        var products: [Int64: String] = [:]
        var periods: [(rowID: Int64, line: ExternalPurchaseReport.Line)] = []
        for row in rows {
            let id: Int64 = try row.decode("id"), start: Int64 = try row.decode("start_id")
            let before = products[start], product: String? = try row.decode("product_id")
            let daysBefore = paidDays[start, default: 0]
            products[start] = product ?? before
            paidDays[start] = daysBefore + ((try? row.decode("paid_days", as: Int.self)) ?? 0)
            guard try !row.decode("sold", as: Bool.self) else { continue }
            var line = try saleLine(row)
            line.paidDaysBefore = daysBefore
            line.initialLineID = lineID(start)
            line.changesProduct = before != nil && product != nil && before != product
            periods.append((id, line))
        }
        return periods
    }

    static func ids(_ texts: [String]?) -> [Int64] { (texts ?? []).compactMap { Int64($0) } }

    /// `renewal_refunded` as row id → share.
    static func shareMap(_ json: String) -> [Int64: Int] {
        guard let object = JSONValue(parsing: Data(json.utf8))?.object else { return [:] }
        var shares: [Int64: Int] = [:]
        for (key, value) in object {
            if let id = Int64(key), let share = value.truncatedInteger { shares[id] = Int(share) }
        }
        return shares
    }
}
