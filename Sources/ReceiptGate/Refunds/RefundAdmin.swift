import Foundation
import ReceiptCore

/// Refund requests and each client's refund policy through the admin API, behind
/// `RECEIPTGATE_ADMIN_TOKEN`: the same rules as `receiptgate client update` and the console's form
/// (`ClientSettingsInput`).
struct RefundAdmin: Sendable {
    let requests: RefundRequestRepository
    let clients: ClientRepository
    let input: ClientSettingsInput

    var routes: [Route] {
        [
            Route("GET", "/admin/refund-requests", authentication: .admin) { _, _ in
                do {
                    return .json(["refund_requests": try await requests.recent(limit: 100).map(ListedRequest.init)])
                } catch {
                    return NativeAPI.error(.verifierError, "the refund requests could not be read")
                }
            },
            Route("GET", "/admin/clients/{client_id}/refund-policy", authentication: .admin) { _, context in
                await policy(context, change: nil)
            },
            Route("PUT", "/admin/clients/{client_id}/refund-policy", authentication: .admin) { request, context in
                await policy(context, change: request.body)
            },
        ]
    }

    struct PolicyChange: Decodable {
        let consumptionConsent: Bool?
        let declineAtPercent: Int?
        let otherwise: String?
        let sampleContent: Bool?
        enum CodingKeys: String, CodingKey {
            case consumptionConsent = "consumption_consent", declineAtPercent = "decline_at_percent", otherwise,
                sampleContent = "sample_content"
        }
    }

    private func policy(_ context: RouteContext, change body: Data?) async -> RouteResponse {
        let id = context.pathParameters["client_id"] ?? ""
        if let problem = Identifier.problem(id) {
            return NativeAPI.error(.invalidField, "path parameter 'client_id' \(problem)")
        }
        do {
            guard var client = try await clients.find(id) else { return NativeAPI.error(.notFound, "no such client") }
            if let body {
                let change: PolicyChange
                switch JSONBody.decode(PolicyChange.self, from: body) {
                case .success(let parsed): change = parsed
                case .failure(let problem): return NativeAPI.error(problem.code, problem.message)
                }
                var values: [String: [String]] = [:]
                if let consent = change.consumptionConsent { values["consumption-consent"] = [consent ? "on" : "off"] }
                if let sample = change.sampleContent { values["sample-content"] = [sample ? "on" : "off"] }
                if let percent = change.declineAtPercent { values["refund-decline-at"] = [String(percent)] }
                if let otherwise = change.otherwise { values["refund-otherwise"] = [otherwise] }
                let settings: ClientSettings
                do { settings = try input.settings(values) } catch {
                    return NativeAPI.error(.invalidField, error.description)
                }
                client = try await clients.update(id, settings)
                context.logger.info("client refund policy changed", ["client.id": id])
            }
            return .json(PolicyView(client.refundPolicy))
        } catch {
            let answer = NativeAPI.error(.verifierError, "the client could not be read or changed; safe to retry")
            return DatabaseOutage.answersRetry(error) ? DatabaseOutage.response(answer) : answer
        }
    }

    struct PolicyView: Encodable {
        let policy: RefundPolicy
        init(_ policy: RefundPolicy) { self.policy = policy }
        enum CodingKeys: String, CodingKey {
            case consumptionConsent = "consumption_consent", declineAtPercent = "decline_at_percent", otherwise,
                sampleContent = "sample_content"
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(policy.consumptionConsent, forKey: .consumptionConsent)
            try container.encode(policy.declineAtPercent, forKey: .declineAtPercent)
            try container.encode(policy.otherwise.rawValue, forKey: .otherwise)
            try container.encode(policy.sampleContentProvided, forKey: .sampleContent)
        }
    }

    struct ListedRequest: Encodable {
        let item: RefundRequestRepository.Listed
        init(_ item: RefundRequestRepository.Listed) { self.item = item }
        enum CodingKeys: String, CodingKey {
            case id, clientID = "client_id", store, transactionID = "transaction_id", productID = "product_id", reason
            case requestedAt = "requested_at_ms", deadline = "deadline_ms", status, answer, answeredAt =
                "answered_at_ms", outcome
        }
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(item.id, forKey: .id)
            try container.encode(item.clientID, forKey: .clientID)
            try container.encode(item.store, forKey: .store)
            try container.encode(item.transactionID, forKey: .transactionID)
            try container.encode(item.productID, forKey: .productID)
            try container.encode(item.reason, forKey: .reason)
            try container.encode(item.requestedAt.epochMilliseconds, forKey: .requestedAt)
            try container.encode(item.deadline.epochMilliseconds, forKey: .deadline)
            try container.encode(item.status, forKey: .status)
            let decided = item.answer.flatMap {
                try? ConsumptionReports.decoder.decode(RefundAnswer.self, from: Data($0.utf8))
            }
            try container.encode(decided, forKey: .answer)
            try container.encode(item.answeredAt?.epochMilliseconds, forKey: .answeredAt)
            try container.encode(item.outcome, forKey: .outcome)
        }
    }
}
