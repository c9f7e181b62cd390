import Foundation
import ReceiptCore

/// `POST /v1/transactions/{store}/{transaction_id}/consumption`: the game tells what happened to
/// a purchase (delivered, how much used), so a store's refund request is answered with it. The
/// latest report wins; a request answered already is not answered again.
extension NativeAPI {
    var consumptionRoute: Route {
        Route("POST", "/v1/transactions/{store}/{transaction_id}/consumption", authentication: .signedClient(.allow),
              rateLimits: [Self.perClient]) { request, context in
            await reportConsumption(request.body, context: context)
        }
    }

    /// Bounds within what the stores accept (at most 1,000 usage events, 5,000 characters each).
    static let maxUsageEvents = 1000, maxUsageDescription = 500

    struct ConsumptionBody: Decodable {
        let delivered: Bool
        let consumedPercent: Double?
        let usageEvents: [UsageEvent]?

        struct UsageEvent: Decodable {
            let atMs: Int64?
            let description: String?
            enum CodingKeys: String, CodingKey { case atMs = "at_ms", description }
        }

        enum CodingKeys: String, CodingKey { case delivered, consumedPercent = "consumed_percent", usageEvents = "usage_events" }
    }

    func reportConsumption(_ body: Data, context: RouteContext) async -> RouteResponse {
        guard let client = context.client else { return Self.error(.unauthorized, "client authentication required") }
        for (name, value) in context.pathParameters.sorted(by: { $0.key < $1.key }) {
            if let problem = Identifier.problem(value) { return Self.error(.invalidField, "path parameter '\(name)' \(problem)") }
        }
        let report: ConsumptionReport
        switch Self.consumptionReport(body) {
        case .success(let parsed): report = parsed
        case .failure(let problem): return Self.error(problem.code, problem.message)
        }
        do {
            guard let record = try await transactions.find(store: StoreID(rawValue: context.pathParameters["store"] ?? ""),
                                                           transactionID: context.pathParameters["transaction_id"] ?? "", client: client)
            else { return Self.notFound("transaction") }
            let reportedAt = try await transactions.recordConsumption(report, transactionRowID: record.managementID)
            return .json(ConsumptionRecorded(transaction: NativeTransaction(record), report: report, reportedAt: reportedAt))
        } catch {
            context.logger.error("consumption report not recorded", ["error": "\(error)"])
            return Self.error(.verifierError, "the report could not be recorded; safe to retry")
        }
    }

    /// The body, checked: `delivered` required, `consumed_percent` 0–100, at most 1,000 usage
    /// events of at most 500 characters each.
    static func consumptionReport(_ body: Data) -> Result<ConsumptionReport, JSONBody.Problem> {
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
        var usage: [ConsumptionReport.UsageEvent] = []
        for (index, event) in events.enumerated() {
            if let description = event.description,
               description.count > maxUsageDescription || description.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                return .failure(.init(code: .invalidField, message: "usage_events[\(index)].description must be at most \(maxUsageDescription) characters of text"))
            }
            if let at = event.atMs, !(0...4_102_444_800_000).contains(at) {
                return .failure(.init(code: .invalidField, message: "usage_events[\(index)].at_ms must be a time in epoch milliseconds"))
            }
            usage.append(.init(at: event.atMs.map { Date(timeIntervalSince1970: Double($0) / 1000) }, description: event.description))
        }
        return .success(ConsumptionReport(delivered: parsed.delivered, consumedMilliunits: parsed.consumedPercent.map { Int(($0 * 1000).rounded()) },
                                          usageEvents: usage))
    }

    struct ConsumptionRecorded: Encodable {
        let transaction: NativeTransaction
        let report: ConsumptionReport
        let reportedAt: Date

        enum CodingKeys: String, CodingKey { case transaction, consumption }
        enum ReportKeys: String, CodingKey { case delivered, consumedPercent = "consumed_percent", usageEvents = "usage_events", reportedAt = "reported_at_ms" }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(transaction, forKey: .transaction)
            var nested = container.nestedContainer(keyedBy: ReportKeys.self, forKey: .consumption)
            try nested.encode(report.delivered, forKey: .delivered)
            try nested.encode(report.consumedMilliunits.map { Double($0) / 1000 }, forKey: .consumedPercent)
            try nested.encode(report.usageEvents.count, forKey: .usageEvents)
            try nested.encode(reportedAt.epochMilliseconds, forKey: .reportedAt)
        }
    }
}
