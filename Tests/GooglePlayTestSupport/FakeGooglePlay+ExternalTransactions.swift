package import Foundation
package import HTTPServer

/// Google Play's external transactions in the fake, behind the same OAuth check as every call:
/// create (refused 409 ALREADY_EXISTS for an id it holds), refund (a partial refund's id once, an
/// amount below what is left), and get, validated as androidpublisher v3 documents them.
extension FakeGooglePlay {
    /// One external transaction Google holds.
    package struct ExternalTransactionRecord: Sendable {
        package let package: String
        package let id: String
        package let token: String
        package let currency: String
        package let originalMicros: Int64
        package var currentMicros: Int64
        /// The tax the transaction was created with (`originalTaxAmount`).
        package let originalTaxMicros: Int64
        package let regionCode: String?
        /// Created as a subscription's payment.
        package let recurring: Bool
        /// A subscription's later payment: the first payment's id (it carries no token).
        package let initialID: String?
        /// Refunds taken: a partial refund's id, or "full".
        package var refunds: [String]
    }

    /// Every external transaction of a package Google holds.
    package func externalTransactions(package: String) -> [ExternalTransactionRecord] {
        state.externalTransactions.get().values.filter { $0.package == package }.sorted { $0.id < $1.id }
    }

    /// RFC 3339, with or without a fraction of a second, as Google takes it.
    static func isTimestamp(_ value: Any?) -> Bool {
        guard let text = value as? String else { return false }
        let plain = ISO8601DateFormatter(), fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return plain.date(from: text) != nil || fractional.date(from: text) != nil
    }

    static func externalTransactionRoutes(
        _ router: inout Router, state: State,
        counted: (String, Bool, @escaping @Sendable (HTTPRequest) async throws -> HTTPResponse) -> HTTPHandler
    ) {
        let base = "/androidpublisher/v3/applications/{package}/externalTransactions"
        @Sendable func lost() -> Bool {
            state.loseExternalTransactionAnswers.update { count in
                guard count > 0 else { return false }
                count -= 1
                return true
            }
        }
        @Sendable func record(_ record: ExternalTransactionRecord) -> HTTPResponse {
            json(
                200,
                #"{"externalTransactionId":"\#(record.id)","packageName":"\#(record.package)","currentPreTaxAmount":{"priceMicros":"\#(record.currentMicros)","currency":"\#(record.currency)"},"originalPreTaxAmount":{"priceMicros":"\#(record.originalMicros)","currency":"\#(record.currency)"},"originalTaxAmount":{"priceMicros":"\#(record.originalTaxMicros)","currency":"\#(record.currency)"},"transactionState":"\#(record.currentMicros == 0 ? "TRANSACTION_CANCELED" : "TRANSACTION_REPORTED")"}"#
            )
        }
        router.post(
            base,
            counted("externaltransactions.create", true) { request in
                let package = try request.parameter("package")
                let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
                let amount = body["originalPreTaxAmount"] as? [String: Any]
                guard let id = request.query["externalTransactionId"], (1...63).contains(id.count),
                    id.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") }),
                    let micros = (amount?["priceMicros"] as? String).flatMap({ Int64($0) }), micros > 0,
                    let currency = amount?["currency"] as? String, currency.count == 3,
                    let taxMicros = ((body["originalTaxAmount"] as? [String: Any])?["priceMicros"] as? String)
                        .flatMap({ Int64($0) }), taxMicros >= 0,
                    isTimestamp(body["transactionTime"]),
                    (body["oneTimeTransaction"] == nil) != (body["recurringTransaction"] == nil),
                    body["recurringTransaction"].map({
                        ["RECURRING", "PREPAID"].contains(
                            (($0 as? [String: Any])?["externalSubscription"] as? [String: Any])?["subscriptionType"]
                                as? String ?? "")
                    }) ?? true
                else {
                    return googleError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
                }
                // The first payment carries the token; a later one names a held first payment instead.
                let kind = (body["oneTimeTransaction"] ?? body["recurringTransaction"]) as? [String: Any] ?? [:]
                let token = kind["externalTransactionToken"] as? String
                let initialID = kind["initialExternalTransactionId"] as? String
                guard (token == nil) != (initialID == nil),
                    initialID.map({ state.externalTransactions.get()["\(package)/\($0)"]?.recurring == true }) ?? true,
                    initialID == nil || body["recurringTransaction"] != nil
                else {
                    return googleError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
                }
                let region = (body["userTaxAddress"] as? [String: Any])?["regionCode"] as? String
                let created = state.externalTransactions.update { all -> Bool in
                    guard all["\(package)/\(id)"] == nil else { return false }
                    all["\(package)/\(id)"] = ExternalTransactionRecord(
                        package: package, id: id, token: token ?? "", currency: currency, originalMicros: micros,
                        currentMicros: micros, originalTaxMicros: taxMicros, regionCode: region,
                        recurring: body["recurringTransaction"] != nil,
                        initialID: initialID, refunds: [])
                    return true
                }
                guard created else { return googleError(409, "ALREADY_EXISTS", "The transaction already exists.") }
                if lost() { return googleError(503, "UNAVAILABLE", "The service is currently unavailable.") }
                return record(state.externalTransactions.get()["\(package)/\(id)"]!)
            })
        router.get(
            "\(base)/{id}",
            counted("externaltransactions.get", true) { request in
                guard
                    let held = state.externalTransactions.get()[
                        "\(try request.parameter("package"))/\(try request.parameter("id"))"]
                else { return googleError(404, "NOT_FOUND", "The external transaction was not found.") }
                return record(held)
            })
        router.post(
            "\(base)/{id}",
            counted("externaltransactions.refund", true) { request in
                let package = try request.parameter("package")
                let parts = try request.parameter("id").split(separator: ":", maxSplits: 1).map(String.init)
                guard parts.count == 2, parts[1] == "refund" else { return notFound() }
                let key = "\(package)/\(parts[0])"
                let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
                guard isTimestamp(body["refundTime"]) else {
                    return googleError(400, "INVALID_ARGUMENT", "refundTime is required.")
                }
                let partial = body["partialRefund"] as? [String: Any]
                let full = body["fullRefund"] is [String: Any]
                guard partial != nil || full, !(partial != nil && full) else {
                    return googleError(400, "INVALID_ARGUMENT", "One of partialRefund or fullRefund is required.")
                }
                let outcome = state.externalTransactions.update { all -> String? in
                    guard var held = all[key], held.currentMicros > 0 else { return "FAILED_PRECONDITION" }
                    if let partial {
                        guard let refundID = partial["refundId"] as? String, !held.refunds.contains(refundID),
                            let micros = ((partial["refundPreTaxAmount"] as? [String: Any])?["priceMicros"] as? String)
                                .flatMap({ Int64($0) }), micros > 0, micros < held.currentMicros
                        else { return "INVALID_ARGUMENT" }
                        held.currentMicros -= micros
                        held.refunds.append(refundID)
                    } else {
                        held.currentMicros = 0
                        held.refunds.append("full")
                    }
                    all[key] = held
                    return nil
                }
                if let outcome { return googleError(400, outcome, "The refund was refused.") }
                if lost() { return googleError(503, "UNAVAILABLE", "The service is currently unavailable.") }
                return record(state.externalTransactions.get()[key]!)
            })
    }
}
