import Foundation
public import ReceiptCore

extension AmazonAppstoreProvider {
    /// An Amazon SNS delivery. Every message is proven first (certificate URL, then signature over
    /// the canonical string); nothing else it says is used before that. A subscription confirmation
    /// is handed back for the operator (its `Token` and `SubscribeURL`); a notification is only a
    /// hint: its receipt is read again from RVS with the owning client's secret, and the event is
    /// what RVS shows. Deduplicated on the SNS `MessageId`.
    public func receiveNotification(
        _ request: NotificationRequest, registered: RegisteredApps
    ) async throws -> StoreNotification {
        let message = try SNSMessage(body: request.body)
        try await authenticate(message)
        switch message.type {
        case "Notification":
            return try await purchaseNews(message, request: request, registered: registered)
        default:
            return try confirmation(message)
        }
    }

    /// The certificate URL must match the configured rule in full before it is fetched; the
    /// signature must then verify with that certificate's key (SHA1withRSA for version 1,
    /// SHA256withRSA for version 2). Throws `NotificationRejection` (forged: answered 4xx).
    func authenticate(_ message: SNSMessage) async throws {
        guard certificateRule.allows(message.signingCertURL) else {
            throw NotificationRejection(
                .forged, reason: "SNS_CERTIFICATE_URL_REFUSED",
                message: "the SigningCertURL is not an Amazon SNS certificate URL")
        }
        guard SNSMessage.signedFields(of: message.type) != nil else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD",
                message: "an SNS message of type \(message.type.prefix(40)) is not taken here")
        }
        guard let canonical = message.canonicalString else {
            // Without every field its signature covers, nothing in it can be proven.
            throw NotificationRejection(
                .forged, reason: "SNS_SIGNATURE_INVALID", message: "the SNS message lacks fields its signature covers")
        }
        let version = message.fields["SignatureVersion"] ?? ""
        guard version == "1" || version == "2" else {
            throw NotificationRejection(
                .forged, reason: "SNS_SIGNATURE_VERSION_UNSUPPORTED", message: "SignatureVersion must be 1 or 2")
        }
        guard let signature = Data(base64Encoded: message.fields["Signature"] ?? "") else {
            throw NotificationRejection(
                .forged, reason: "SNS_SIGNATURE_INVALID", message: "the SNS signature is not base64")
        }
        let key = try await certificates.key(at: message.signingCertURL)
        let signed = Data(canonical.utf8)
        let valid =
            version == "1"
            ? key.isValidSHA1WithRSA(signature: signature, for: signed)
            : key.isValidRS256(signature: signature, for: signed)
        guard valid else {
            throw NotificationRejection(
                .forged, reason: "SNS_SIGNATURE_INVALID", message: "the SNS signature does not verify")
        }
    }

    /// A proven (un)subscription confirmation, kept with what the operator needs to confirm it.
    func confirmation(_ message: SNSMessage) throws -> StoreNotification {
        var kept: [String: String] = [:]
        for name in ["Type", "MessageId", "TopicArn", "Token", "SubscribeURL", "Timestamp", "Message"] {
            kept[name] = message.fields[name]
        }
        let decoded = try JSONEncoder.sortedForStorage.encode(kept)
        var notification = StoreNotification(
            store: store, notificationID: message.messageID, type: message.type, subtype: nil, environment: nil,
            appIdentifier: nil, transactionID: nil, originalTransactionID: nil, productID: nil,
            signedAt: message.timestamp, decodedJSON: decoded)
        notification.event = StoreEvent(kind: .other)
        // The Amazon console asks for this token to finish subscribing the endpoint; the operator
        // finds it in the log (and in `GET /admin/notifications`). An unsubscribe confirmation needs no action.
        if message.type == "SubscriptionConfirmation" {
            notification.operatorNotice = OperatorNotice(
                message:
                    "SNS subscription awaits confirmation: give its Token to the Amazon console or open its SubscribeURL",
                fields: ["sns.topic_arn": message.fields["TopicArn"] ?? "", "sns.token": message.fields["Token"] ?? ""])
        }
        return notification
    }
}
