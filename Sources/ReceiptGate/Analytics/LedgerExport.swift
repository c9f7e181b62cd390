package import Foundation
package import Postgres
package import ReceiptCore

/// The ledger as finance reads it: CSV, a header, then one row per purchase made in the range and
/// one per refund made in it (a purchase refunded in the range gives both), oldest first. Read
/// through a cursor in batches, so a year of a big game never sits in memory, from one snapshot.
package struct LedgerExport: Sendable {
    let pool: PostgresPool

    package init(pool: PostgresPool) { self.pool = pool }

    package struct Range: Sendable {
        package var since: Date, until: Date, clientID: String?
        /// nil: both environments.
        package var environment: StoreEnvironment?

        package init(since: Date, until: Date, clientID: String?, environment: StoreEnvironment?) {
            self.since = since
            self.until = until
            self.clientID = clientID
            self.environment = environment
        }
    }

    package static let header = [
        "type", "date", "store", "environment", "client_id", "client_name", "transaction_id", "original_transaction_id",
        "order_id", "product_id", "product_kind", "quantity", "player_id", "amount", "currency", "storefront", "state",
        "purchase_date", "refund_date",
    ]

    static let batchSize = 2_000

    /// `YYYY-MM-DD` as that day's UTC midnight; nil when it is not a date.
    package static func day(_ text: String) -> Date? { AnalyticsDays.parse(text) }

    /// Hands `write` the CSV text batch by batch (the header first) on a database thread, which
    /// it may block (a download waiting for its client). How many rows were written.
    package func write(_ range: Range, to write: @escaping @Sendable (String) throws -> Void) async throws -> Int {
        let environment = range.environment?.rawValue
        return try await pool.withTransaction { connection in
            try connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            try connection.execute(
                """
                DECLARE ledger_export NO SCROLL CURSOR FOR
                SELECT x.type, x.at, x.store, x.environment, x.client_id, c.name AS client_name, x.transaction_id,
                       x.original_transaction_id, x.order_id, x.product_id, x.product_kind, x.quantity, x.player_id, x.amount,
                       x.currency, x.storefront, x.state, x.purchase_date, x.revocation_date
                FROM (
                    SELECT 'purchase' AS type, purchase_date AS at, id, price_milliunits AS amount, \(unescaped: Self.columns)
                    FROM transactions
                    WHERE purchase_date >= \(range.since) AND purchase_date < \(range.until)
                      AND (\(environment)::text IS NULL OR environment = \(environment))
                      AND (\(range.clientID)::text IS NULL OR client_id = \(range.clientID))
                    UNION ALL
                    SELECT 'refund', revocation_date, id,
                           -(price_milliunits * COALESCE(refund_percentage_milliunits, 100000) / 100000), \(unescaped: Self.columns)
                    FROM transactions
                    WHERE revocation_date >= \(range.since) AND revocation_date < \(range.until) AND state = 'refunded'
                      AND (\(environment)::text IS NULL OR environment = \(environment))
                      AND (\(range.clientID)::text IS NULL OR client_id = \(range.clientID))
                ) x LEFT JOIN clients c ON c.id = x.client_id
                ORDER BY x.at, x.id, x.type
                """)
            try write(CSV.line(Self.header))
            var written = 0
            while true {
                let rows = try connection.query("FETCH \(unescaped: String(Self.batchSize)) FROM ledger_export")
                if rows.isEmpty { break }
                written += rows.count
                try write(try rows.map { try CSV.line(Self.fields($0)) }.joined())
            }
            return written
        }
    }

    private static let columns =
        "store, environment, client_id, transaction_id, original_transaction_id, order_id, product_id, product_kind, quantity, "
        + "player_id, currency, storefront, state, purchase_date, revocation_date"

    /// One row's fields in the header's order: times as RFC 3339 UTC, the amount as a decimal.
    private static func fields(_ row: PostgresRow) throws -> [String] {
        let columns = [
            "type", "at", "store", "environment", "client_id", "client_name", "transaction_id",
            "original_transaction_id",
            "order_id", "product_id", "product_kind", "quantity", "player_id", "amount", "currency", "storefront",
            "state",
            "purchase_date", "revocation_date",
        ]
        return try columns.map { column in
            switch column {
            case "at", "purchase_date", "revocation_date":
                return (try row.decode(column, as: Date?.self)).map(UTCTimestamp.milliseconds) ?? ""
            case "amount":
                return (try row.decode(column, as: Int64?.self)).map(decimal) ?? ""
            default:
                return try row.decode(column, as: String?.self) ?? ""
            }
        }
    }

    /// Milliunits as a decimal with three places: `-4990` is `-4.990`.
    static func decimal(_ milliunits: Int64) -> String {
        let sign = milliunits < 0 ? "-" : "", magnitude = milliunits.magnitude
        let fraction = String(magnitude % 1000)
        return "\(sign)\(magnitude / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

/// RFC 4180 lines. A text field a spreadsheet would run as a formula (`=`, `+`, `-`, `@` first)
/// is written with a leading `'`, so a player id from a game cannot become a formula in finance's
/// spreadsheet; numbers are written as they are.
enum CSV {
    static func line(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }

    static func field(_ text: String) -> String {
        var value = text
        if let first = value.first, "=+-@\t\r".contains(first), Double(value) == nil { value = "'" + value }
        guard value.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return value }
        return "\"" + value.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
