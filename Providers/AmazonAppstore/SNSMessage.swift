import Foundation
import JSON
import ReceiptCore

/// One Amazon SNS delivery over HTTP(S): a JSON object (sent as `text/plain`) whose fields are
/// all strings. Only what the signature covers is used before the signature is checked.
struct SNSMessage: Sendable {
    let fields: [String: String]

    var type: String { fields["Type"] ?? "" }
    var messageID: String { fields["MessageId"] ?? "" }
    var message: String { fields["Message"] ?? "" }
    var signingCertURL: String { fields["SigningCertURL"] ?? "" }

    static let maxBodyBytes = 256 * 1024

    init(body: Data) throws {
        guard body.count <= Self.maxBodyBytes,
            let object = JSONValue(parsing: body)?.object
        else {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD", message: "the body must be an Amazon SNS message (a JSON object)")
        }
        var fields: [String: String] = [:]
        for (key, value) in object {
            if let text = value.string { fields[key] = text }
        }
        self.fields = fields
        for required in [
            "Type", "MessageId", "Message", "Timestamp", "TopicArn", "SignatureVersion", "Signature", "SigningCertURL",
        ]
        where (fields[required] ?? "").isEmpty {
            throw NotificationRejection(
                .malformed, reason: "INVALID_FIELD", message: "the SNS message has no \(required)")
        }
        guard messageID.utf8.count <= 200 else {
            throw NotificationRejection(.malformed, reason: "INVALID_FIELD", message: "the SNS MessageId is too long")
        }
    }

    /// The fields each message type signs, in the order SNS signs them.
    static func signedFields(of type: String) -> [String]? {
        switch type {
        case "Notification": ["Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"]
        case "SubscriptionConfirmation", "UnsubscribeConfirmation":
            ["Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"]
        default: nil
        }
    }

    /// The string SNS signed: each signed field present as its name and value on lines of their
    /// own (`Subject` only when the message has one). Nil for a type SNS does not sign this way, or
    /// when a field it signs is missing.
    var canonicalString: String? {
        guard let names = Self.signedFields(of: type) else { return nil }
        var text = ""
        for name in names {
            guard let value = fields[name] else {
                if name == "Subject" { continue }
                return nil
            }
            text += "\(name)\n\(value)\n"
        }
        return text
    }

    var timestamp: Date? {
        guard let raw = fields["Timestamp"] else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: raw) { return date }
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: raw)
    }
}

/// The purchase news inside a Notification's `Message`, as Amazon's Real-Time Notifications send it.
struct RealTimeNotification: Codable, Sendable {
    var appPackageName: String?
    var appUserId: String?
    var receiptId: String?
    var notificationType: String?
    var timestamp: Int64?
    var betaProductTransaction: Bool?
}
