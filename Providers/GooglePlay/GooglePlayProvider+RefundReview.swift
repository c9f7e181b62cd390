public import Foundation
import OpenSSLCrypto
public import ReceiptCore

/// Google's chargeback reviews: a `pendingRefundReviewNotification` names the order and a token;
/// the answer is `orders.reviewrefund` within 24 hours, and Google records only the first.
extension GooglePlayProvider: RefundRequestAnswering {
    static let reviewAnswerWindow: TimeInterval = 24 * 3600

    /// The request as the ledger keeps it: one per token (its digest names it; the token itself is
    /// kept only until the answer goes). The push is a hint: the answer is only ever the order's,
    /// to Google, which refuses a token it did not issue.
    static func pendingRefundReview(
        _ review: DeveloperNotification.PendingRefundReview, token: String, orderID: String, package: String,
        eventTime: Date
    ) -> StoreEvent {
        var purchase = VerifiedPurchase(store: .googlePlay, environment: .production, transactionID: orderID)
        purchase.orderID = orderID
        purchase.appIdentifier = package
        let digest = (try? SHA256.hex(Data(token.utf8))) ?? orderID
        let news = RefundRequestNews(
            requestID: "pending-refund:\(digest.prefix(40))", answerToken: token, requestedAt: eventTime,
            deadline: eventTime.addingTimeInterval(reviewAnswerWindow),
            reason: review.refundReason.map { reasons[$0] ?? String($0) })
        return StoreEvent(kind: .consumptionRequest, purchase: purchase, refundRequest: news)
    }

    /// Google's refund reasons, as its voided-purchase reasons name them.
    static let reasons = [
        0: "other", 1: "remorse", 2: "not_received", 3: "defective", 4: "accidental_purchase", 5: "fraud",
        6: "friendly_fraud", 7: "chargeback",
    ]

    /// The request body of `orders.reviewrefund`.
    struct ReviewRefundBody: Encodable, Equatable {
        struct Usage: Encodable, Equatable {
            let consumptionTime: String?
            let consumptionItemDescription: String?
        }
        let pendingRefundToken: String
        let sampleContentProvided: Bool
        let refundPreference: String
        let consumptionPercentageMilliunits: Int?
        let consumptionUsageEvents: [Usage]?
    }

    /// The neutral answer in Google's words: grant is `APPROVE`; prorated, which Google does not
    /// offer, is `NEUTRAL`. Consumption goes only with the customer's consent, as for Apple.
    static func reviewBody(_ answer: RefundAnswer, token: String) -> ReviewRefundBody {
        let preference =
            switch answer.preference {
            case .grant: "APPROVE"
            case .decline: "DECLINE"
            case .prorated, .neutral: "NEUTRAL"
            }
        let usage =
            answer.customerConsented && !answer.usageEvents.isEmpty
            ? answer.usageEvents.prefix(1000).map {
                ReviewRefundBody.Usage(
                    consumptionTime: $0.at.map(Self.rfc3339), consumptionItemDescription: $0.description)
            }
            : nil
        return ReviewRefundBody(
            pendingRefundToken: token, sampleContentProvided: answer.sampleContentProvided,
            refundPreference: preference,
            consumptionPercentageMilliunits: answer.customerConsented ? answer.consumedMilliunits : nil,
            consumptionUsageEvents: usage)
    }

    public func answer(
        _ request: RefundRequestTarget, with answer: RefundAnswer, credentials: [String: String]
    ) async throws -> Data {
        guard let token = request.answerToken, let package = request.appIdentifier else {
            throw StoreVerificationError(
                code: .verifierError, reason: "GOOGLE_REVIEW_INCOMPLETE",
                message: "the review has no token or package to answer with")
        }
        let body = try JSONEncoder.sortedForStorage.encode(Self.reviewBody(answer, token: token))
        do {
            try await api.reviewRefund(
                package: package, orderID: request.transactionID, body: body, key: try serviceAccountKey(credentials))
        } catch let error as StoreAPIError {
            throw error.verificationError
        }
        // What was sent, kept without the token.
        return try JSONEncoder.sortedForStorage.encode(Self.reviewBody(answer, token: "(sent)"))
    }

    static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }
}
