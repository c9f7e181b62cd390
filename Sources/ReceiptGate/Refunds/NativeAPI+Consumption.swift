import Foundation
import ReceiptCore

/// `POST /v1/transactions/{store}/{transaction_id}/consumption`: the game tells what happened to
/// a purchase (delivered, how much used), so a store's refund request is answered with it. A
/// request answered already is not answered again.
///
/// Reports are ordered by their own time, not by when they arrive: `reported_at_ms` when the body
/// has it, else the request's signed `X-Timestamp`. A report replaces the stored one only if its
/// time is later, so a delayed or replayed older report (its time is under the signature) never
/// takes the place of a newer one. The signature is version 2 (the route's path names the
/// transaction), so a report signed for one transaction cannot be sent to another.
extension NativeAPI {
    var consumptionRoute: Route {
        Route(
            "POST", "/v1/transactions/{store}/{transaction_id}/consumption", authentication: .signedClient(.allow),
            rateLimits: [Self.perClient]
        ) { request, context in
            await reportConsumption(request.body, signedTimestamp: request.headers["x-timestamp"], context: context)
        }
    }

    /// Bounds within what the stores accept (at most 1,000 usage events, 5,000 characters each).
    static let maxUsageEvents = 1000, maxUsageDescription = 500

    /// How far `reported_at_ms` may run ahead of the request's signed `X-Timestamp`: the signature
    /// window. Further would let one mistaken clock hold off every later report.
    static let maxReportLeadMs: Int64 = Int64(ClientAuthentication.window) * 1000

    struct ConsumptionBody: Decodable {
        let delivered: Bool
        let consumedPercent: Double?
        let usageEvents: [UsageEvent]?
        let reportedAtMs: Int64?

        struct UsageEvent: Decodable {
            let atMs: Int64?
            let description: String?
            enum CodingKeys: String, CodingKey { case atMs = "at_ms", description }
        }

        enum CodingKeys: String, CodingKey {
            case delivered, consumedPercent = "consumed_percent", usageEvents = "usage_events", reportedAtMs =
                "reported_at_ms"
        }
    }

    /// A checked report and its own time, in epoch milliseconds.
    struct TimedReport {
        let report: ConsumptionReport
        let asOfMs: Int64
    }

    func reportConsumption(_ body: Data, signedTimestamp: String?, context: RouteContext) async -> RouteResponse {
        guard let client = context.client else { return Self.error(.unauthorized, "client authentication required") }
        if let refusal = refusal(ofPath: context.pathParameters) { return refusal }
        // Authentication checked the signed timestamp; without it nothing could be ordered.
        guard let signedSeconds = signedTimestamp.flatMap(Int64.init),
            case let (signedAtMs, false) = signedSeconds.multipliedReportingOverflow(by: 1000)
        else { return Self.error(.unauthorized, "X-Timestamp is required") }
        let timed: TimedReport
        switch Self.consumptionReport(body, signedAtMs: signedAtMs) {
        case .success(let parsed): timed = parsed
        case .failure(let problem): return Self.error(problem.code, problem.message)
        }
        do {
            guard
                let record = try await transactions.find(
                    store: StoreID(rawValue: context.pathParameters["store"] ?? ""),
                    transactionID: context.pathParameters["transaction_id"] ?? "", client: client)
            else { return Self.notFound("transaction") }
            let stored = try await transactions.keepConsumption(
                timed.report, asOfMs: timed.asOfMs, transactionRowID: record.managementID)
            return .json(ConsumptionRecorded(transaction: NativeTransaction(record), stored: stored))
        } catch {
            context.logger.error("consumption report not recorded", ["error": "\(error)"])
            return Self.error(.verifierError, "the report could not be recorded; safe to retry")
        }
    }

    /// The body, checked: `delivered` required, `consumed_percent` 0–100, at most 1,000 usage
    /// events of at most 500 characters each, `reported_at_ms` at most the signature window past
    /// the signed time `signedAtMs`, which is the report's time when the body gives none.
    static func consumptionReport(_ body: Data, signedAtMs: Int64) -> Result<TimedReport, JSONBody.Problem> {
        let parsed: ConsumptionBody
        switch JSONBody.decode(ConsumptionBody.self, from: body) {
        case .success(let value): parsed = value
        case .failure(let problem): return .failure(problem)
        }
        if let percent = parsed.consumedPercent, !(0...100).contains(percent) || !percent.isFinite {
            return .failure(.init(code: .invalidField, message: "consumed_percent must be a number from 0 to 100"))
        }
        let events = parsed.usageEvents ?? []
        guard events.count <= maxUsageEvents else {
            return .failure(.init(code: .invalidField, message: "usage_events takes at most \(maxUsageEvents) events"))
        }
        if let reportedAt = parsed.reportedAtMs,
            reportedAt < 0 || reportedAt > signedAtMs.addingReportingOverflow(maxReportLeadMs).partialValue
        {
            return .failure(
                .init(
                    code: .invalidField,
                    message:
                        "reported_at_ms must be a time in epoch milliseconds, at most \(maxReportLeadMs / 1000) s after X-Timestamp"
                ))
        }
        var usage: [ConsumptionReport.UsageEvent] = []
        for (index, event) in events.enumerated() {
            if let description = event.description,
                description.count > maxUsageDescription
                    || description.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            {
                return .failure(
                    .init(
                        code: .invalidField,
                        message:
                            "usage_events[\(index)].description must be at most \(maxUsageDescription) characters of text"
                    ))
            }
            if let at = event.atMs, !(0...4_102_444_800_000).contains(at) {
                return .failure(
                    .init(
                        code: .invalidField,
                        message: "usage_events[\(index)].at_ms must be a time in epoch milliseconds"))
            }
            usage.append(
                .init(
                    at: event.atMs.map { Date(timeIntervalSince1970: Double($0) / 1000) },
                    description: event.description))
        }
        let report = ConsumptionReport(
            delivered: parsed.delivered, consumedMilliunits: parsed.consumedPercent.map { Int(($0 * 1000).rounded()) },
            usageEvents: usage)
        return .success(TimedReport(report: report, asOfMs: parsed.reportedAtMs ?? signedAtMs))
    }

    /// `consumption` is the report that stands: this one, or, when `superseded`, a report of the
    /// same or a later time that was there already.
    struct ConsumptionRecorded: Encodable {
        let transaction: NativeTransaction
        let stored: TransactionRepository.StoredConsumption

        enum CodingKeys: String, CodingKey { case transaction, consumption, superseded }
        enum ReportKeys: String, CodingKey {
            case delivered, consumedPercent = "consumed_percent", usageEvents = "usage_events", reportedAt =
                "reported_at_ms"
            case receivedAt = "received_at_ms"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(transaction, forKey: .transaction)
            var nested = container.nestedContainer(keyedBy: ReportKeys.self, forKey: .consumption)
            try nested.encode(stored.report.delivered, forKey: .delivered)
            try nested.encode(stored.report.consumedMilliunits.map { Double($0) / 1000 }, forKey: .consumedPercent)
            try nested.encode(stored.report.usageEvents.count, forKey: .usageEvents)
            try nested.encode(stored.asOfMs, forKey: .reportedAt)
            try nested.encode(stored.receivedAt.epochMilliseconds, forKey: .receivedAt)
            try container.encode(!stored.kept, forKey: .superseded)
        }
    }
}
