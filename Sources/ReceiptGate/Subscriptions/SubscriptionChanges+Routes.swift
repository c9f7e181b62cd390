import Foundation
import ReceiptCore

extension SubscriptionChanges {
    /// `POST /admin/transactions/{store}/{transaction_id}/revoke` (`{"refund": "full"|"prorated"}`),
    /// `…/cancel` and `…/defer` (`{"days": 1…365}`), for the subscription the purchase is a period of.
    var routes: [Route] {
        [
            Route("POST", "/admin/transactions/{store}/{transaction_id}/revoke", authentication: .admin) {
                request, context in
                let body: RevokeBody
                switch JSONBody.decode(RevokeBody.self, from: request.body.isEmpty ? Data("{}".utf8) : request.body) {
                case .success(let parsed): body = parsed
                case .failure(let problem): return NativeAPI.error(problem.code, problem.message)
                }
                guard let refund = RevocationRefund(rawValue: body.refund ?? RevocationRefund.full.rawValue) else {
                    return NativeAPI.error(.invalidField, "refund must be \"full\" or \"prorated\"")
                }
                return await answer(.revoke(refund: refund), context)
            },
            Route("POST", "/admin/transactions/{store}/{transaction_id}/cancel", authentication: .admin) { _, context in
                await answer(.cancel, context)
            },
            Route("POST", "/admin/transactions/{store}/{transaction_id}/defer", authentication: .admin) {
                request, context in
                let body: DeferBody
                switch JSONBody.decode(DeferBody.self, from: request.body) {
                case .success(let parsed): body = parsed
                case .failure(let problem): return NativeAPI.error(problem.code, problem.message)
                }
                guard let days = body.days, SubscriptionChange.deferralDays.contains(days) else {
                    return NativeAPI.error(
                        .invalidField,
                        "days must be a whole number from \(SubscriptionChange.deferralDays.lowerBound) to "
                            + "\(SubscriptionChange.deferralDays.upperBound)")
                }
                return await answer(.deferRenewal(days: days), context)
            },
        ]
    }

    struct RevokeBody: Decodable { let refund: String? }

    /// The answer to a change asked for: the ledger moves later, on the store's own word.
    struct Requested: Encodable {
        let status = "requested"
        let originalTransactionID: String
        /// The subscription's new end, when the store answered one (a deferral).
        let newExpiresDateMs: Int64?
        let note = "the ledger moves when the store's notification or read-back shows the change"
        enum CodingKeys: String, CodingKey {
            case status, originalTransactionID = "original_transaction_id", newExpiresDateMs = "new_expires_date_ms",
                note
        }

        /// Every field present, the new end null when the store gave none.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(status, forKey: .status)
            try container.encode(originalTransactionID, forKey: .originalTransactionID)
            try container.encode(newExpiresDateMs, forKey: .newExpiresDateMs)
            try container.encode(note, forKey: .note)
        }
    }
    struct DeferBody: Decodable { let days: Int? }

    private func answer(_ change: SubscriptionChange, _ context: RouteContext) async -> RouteResponse {
        let store = context.pathParameters["store"] ?? "",
            transactionID = context.pathParameters["transaction_id"] ?? ""
        guard Identifier.problem(store) == nil, Identifier.problem(transactionID) == nil else {
            return NativeAPI.error(.invalidField, "store and transaction id must be identifiers")
        }
        do {
            switch try await self.change(change, store: store, transactionID: transactionID, who: "admin-api") {
            case .requested(let original, let newExpiry):
                return .json(
                    Requested(originalTransactionID: original, newExpiresDateMs: newExpiry?.epochMilliseconds),
                    status: 202)
            case .notFound: return NativeAPI.error(.notFound, "no purchase \(transactionID) in \(store)")
            case .notManageable(let why): return NativeAPI.error(.invalidField, why)
            case .refused(let why): return NativeAPI.error(.verificationFailed, why)
            }
        } catch {
            return NativeAPI.error(.verifierError, "the change could not be asked for; safe to retry")
        }
    }
}
