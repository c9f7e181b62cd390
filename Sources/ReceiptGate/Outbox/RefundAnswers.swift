import Foundation
import ReceiptCore

/// Answers stores' refund requests when their outbox message comes due: the answer is decided
/// then (the game's latest report, the client's policy now), sent through the store's provider,
/// and kept. A request answered already is not sent again; one past its deadline is missed.
struct RefundAnswers: Sendable {
    let answerers: [StoreID: any RefundRequestAnswering]
    let requests: RefundRequestRepository
    let clients: ClientRepository
    let metrics: Metrics?
    let logger: Logger

    /// Nil when the message is done with (answered, or nothing more can be done); else why it
    /// must be tried again.
    func send(_ payload: String) async -> String? {
        struct Body: Decodable { let request_id: Int64 }
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(payload.utf8)) else { return "not a refund answer message" }
        do {
            guard let request = try await requests.prepare(body.request_id), request.status == "pending" else { return nil }
            guard request.deadline > Date() else {
                _ = try await requests.closeMissed().map { metrics?.recordRefundDeadlineMissed(store: $0) }
                return nil
            }
            guard let answerer = answerers[request.target.store] else { return "no store provider answers \(request.target.store) refund requests" }
            guard let client = try await clients.find(request.clientID), !client.disabled else {
                return nil  // a disabled client's requests are left to the store's default
            }
            let answer = RefundAnswerRule.answer(request.known, policy: client.refundPolicy)
            let credentials = try await clients.sealedSettings(of: request.clientID, prefix: "\(request.target.store.rawValue).")
            let sent = try await answerer.answer(request.target, with: answer, credentials: credentials)
            try await requests.markAnswered(request.id, answer: answer, sent: sent)
            metrics?.recordRefundAnswer(store: request.target.store.rawValue, preference: answer.preference.rawValue)
            logger.info("refund request answered", ["store": request.target.store.rawValue, "refund_request.id": String(request.id),
                                                    "preference": answer.preference.rawValue, "policy_only": String(answer.policyOnly)])
            return nil
        } catch {
            return "\(error)"
        }
    }
}
