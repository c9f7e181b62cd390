import Foundation
import ReceiptCore

/// Answers stores' refund requests when their outbox message comes due: the answer is decided
/// then (the game's latest report, the client's policy now), sent through the store's provider,
/// and kept. A request is taken before the store is called, so it is never sent twice; one past
/// its deadline is missed.
struct RefundAnswers: Sendable {
    let answerers: [StoreID: any RefundRequestAnswering]
    let requests: RefundRequestRepository
    let clients: ClientRepository
    let metrics: Metrics?
    let logger: Logger
    /// The service's clock, against which a request's deadline has passed or not.
    let now: @Sendable () -> Date

    /// Nil when the message is done with (settled, or nothing more can be done); else why it
    /// must be tried again.
    func send(_ payload: String) async -> String? {
        struct Body: Decodable { let request_id: Int64 }
        guard let body = try? JSONDecoder().decode(Body.self, from: Data(payload.utf8)) else {
            return "not a refund answer message"
        }
        do {
            guard let request = try await requests.prepare(body.request_id) else { return nil }
            if request.status == "sending" {
                // A process died while sending: whether the store took it is unknown; never sent twice.
                try await requests.settle(
                    request.id, status: "uncertain", answer: nil, sent: nil,
                    why: "the sending process stopped before the store's answer")
                return nil
            }
            guard request.status == "pending" else { return nil }
            guard request.deadline > now() else {
                for store in try await requests.closeMissed(now: now()) {
                    metrics?.recordRefundDeadlineMissed(store: store)
                }
                return nil
            }
            guard let answerer = answerers[request.target.store] else {
                return "no store provider answers \(request.target.store) refund requests"
            }
            guard let client = try await clients.find(request.clientID), !client.disabled else {
                try await requests.settle(
                    request.id, status: "skipped", answer: nil, sent: nil, why: "the client is disabled")
                return nil
            }
            let answer = RefundAnswerRule.answer(request.known, policy: client.refundPolicy)
            let credentials = try await clients.sealedSettings(
                of: request.clientID, prefix: "\(request.target.store.rawValue).")
            guard try await requests.takeForSending(request.id) else { return nil }
            let sent: Data
            do {
                sent = try await answerer.answer(request.target, with: answer, credentials: credentials)
            } catch let notTaken as RefundAnswerNotTaken {
                try await requests.settle(
                    request.id, status: "not_answered", answer: answer, sent: nil, why: notTaken.reason)
                return nil
            } catch let error as StoreVerificationError where !error.isRetryable {
                try await requests.settle(
                    request.id, status: "refused", answer: answer, sent: nil, why: error.description)
                logger.warning(
                    "refund answer refused by the store",
                    [
                        "store": request.target.store.rawValue, "refund_request.id": String(request.id),
                        "error": String(error.description.prefix(300)),
                    ])
                return nil
            } catch {
                try await requests.release(request.id)
                return "\(error)"
            }
            try await requests.settle(request.id, status: "answered", answer: answer, sent: sent)
            metrics?.recordRefundAnswer(store: request.target.store.rawValue, preference: answer.preference.rawValue)
            logger.info(
                "refund request answered",
                [
                    "store": request.target.store.rawValue, "refund_request.id": String(request.id),
                    "preference": answer.preference.rawValue, "policy_only": String(answer.policyOnly),
                ])
            return nil
        } catch {
            return "\(error)"
        }
    }
}
