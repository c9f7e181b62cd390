public import Foundation
public import ReceiptCore

/// Apple's consumption requests: a `CONSUMPTION_REQUEST` names the transaction and the customer's
/// reason; the answer is Send Consumption Information, version 2
/// (`PUT /inApps/v2/transactions/consumption/{transactionId}`), within 12 hours.
extension AppStoreProvider: RefundRequestAnswering {
    /// Apple's window for an answer, from the notification's `signedDate`.
    static let consumptionAnswerWindow: TimeInterval = 12 * 3600

    static func refundRequest(id: String, signedAt: Date?, reason: String?, now: Date) -> RefundRequestNews {
        let requested = signedAt ?? now
        return RefundRequestNews(
            requestID: id, requestedAt: requested, deadline: requested.addingTimeInterval(consumptionAnswerWindow),
            reason: reason)
    }

    /// The request body of Send Consumption Information (v2).
    struct ConsumptionRequestBody: Encodable, Equatable {
        let customerConsented: Bool
        let sampleContentProvided: Bool
        let deliveryStatus: String
        let consumptionPercentage: Int?
        let refundPreference: String?
    }

    /// The neutral answer in Apple's words. A delivery nobody knows of is reported delivered (a
    /// game claimed the purchase, so it was told to deliver it). A prorated refund goes only with a
    /// consumption above zero, as Apple requires; otherwise no preference is given.
    static func consumptionBody(_ answer: RefundAnswer) -> ConsumptionRequestBody {
        let preference: String? =
            switch answer.preference {
            case .grant: "GRANT_FULL"
            case .decline: "DECLINE"
            case .prorated: (answer.consumedMilliunits ?? 0) > 0 ? "GRANT_PRORATED" : nil
            case .neutral: nil
            }
        return ConsumptionRequestBody(
            customerConsented: answer.customerConsented, sampleContentProvided: answer.sampleContentProvided,
            deliveryStatus: answer.delivered == false ? "UNDELIVERED_OTHER" : "DELIVERED",
            consumptionPercentage: answer.customerConsented ? answer.consumedMilliunits : nil,
            refundPreference: answer.customerConsented ? preference : nil)
    }

    public func answer(
        _ request: RefundRequestTarget, with answer: RefundAnswer, credentials: [String: String]
    ) async throws -> Data {
        guard let configuration, let bundleID = request.appIdentifier,
            let api = configuration.serverAPIClient(bundleID: bundleID, http: http, now: now)
        else {
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_NOT_CONFIGURED",
                message:
                    "answering consumption requests needs the App Store Server API key (RECEIPTGATE_APPSTORE_API_KEY_ID, _ISSUER_ID, _KEY_PATH)"
            )
        }
        // Apple refuses an answer that does not say the customer consented (InvalidCustomerConsentedError).
        guard answer.customerConsented else {
            throw RefundAnswerNotTaken(
                "the App Store takes consumption information only with the customer's consent (--consumption-consent)")
        }
        let body = try JSONEncoder.sortedForStorage.encode(Self.consumptionBody(answer))
        do {
            try await api.sendConsumptionInformation(
                request.transactionID, body: body, environment: Self.appStoreEnvironment(request.environment))
        } catch {
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_CONSUMPTION_REFUSED", message: error.message,
                isRetryable: error.kind == .unavailable)
        }
        return body
    }
}
