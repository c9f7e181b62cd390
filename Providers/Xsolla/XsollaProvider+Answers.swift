import Foundation
public import ReceiptCore

extension XsollaProvider {
    /// Xsolla's own answers (its webhook overview, and its order webhooks' response table): 204
    /// with no body when the webhook is taken (recorded, already on record, or nothing to record:
    /// a valid user); 400 with `{"error": {"code", "message"}}` for what Xsolla sent wrong
    /// (INVALID_SIGNATURE, INVALID_USER, INVALID_PARAMETER), which it does not send again; and 500
    /// for trouble on our side, which it sends again later (up to 12 times).
    public func answer(to outcome: NotificationOutcome) -> NotificationAnswer? {
        switch outcome {
        case .accepted:
            return NotificationAnswer(status: 204)
        case .refused(let rejection):
            switch rejection.kind {
            case .ignored: return NotificationAnswer(status: 204)
            case .forged: return Self.error(400, XsollaWebhookCode.invalidSignature, rejection.message)
            case .malformed:
                let code =
                    rejection.reason == XsollaWebhookCode.invalidUser
                    ? XsollaWebhookCode.invalidUser : XsollaWebhookCode.invalidParameter
                return Self.error(400, code, rejection.message)
            case .retryable: return Self.error(500, XsollaWebhookCode.serverError, rejection.message)
            }
        case .unknownClient:
            return Self.error(
                404, XsollaWebhookCode.invalidParameter,
                "no enabled client with an Xsolla project has this id; check the webhook URL in Publisher Account")
        case .unavailable:
            return Self.error(
                500, XsollaWebhookCode.serverError, "the webhook could not be recorded now; send it again")
        }
    }

    static func error(_ status: Int, _ code: String, _ message: String) -> NotificationAnswer {
        struct Body: Encodable {
            struct Detail: Encodable {
                let code: String
                let message: String
            }
            let error: Detail
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let body = (try? encoder.encode(Body(error: .init(code: code, message: message)))) ?? Data()
        return NotificationAnswer(status: status, body: body, contentType: "application/json")
    }
}
