import Foundation
import HTTPClient
import OpenSSLCrypto

/// Turns an outbox e-mail (`{"to", "subject", "text"}`) into an RFC 5322 message and sends it
/// through the configured SMTP server.
struct Mailer: Sendable {
    let settings: SMTPSettings
    let client: SMTPClient
    /// The service's clock, for the message's `Date:`.
    let now: @Sendable () -> Date

    init(settings: SMTPSettings, now: @escaping @Sendable () -> Date) {
        self.settings = settings
        self.now = now
        var configuration = SMTPClient.Configuration(
            url: settings.url, user: settings.user, password: settings.password, insecure: settings.insecure)
        configuration.timeout = .seconds(30)
        client = SMTPClient(configuration)
    }

    struct Message: Decodable {
        let to: String
        let subject: String
        let text: String
    }

    /// Nil on success, else why not (kept on the outbox row; never the message itself).
    func send(payload: String, eventID: String) async -> String? {
        guard let message = try? JSONDecoder().decode(Message.self, from: Data(payload.utf8)),
            Self.isSafeHeader(message.to), message.to.contains("@"), message.to.utf8.count <= 254
        else {
            return "not an e-mail message"
        }
        do {
            try await client.send(
                from: settings.from, to: [message.to],
                message: Self.compose(message, from: settings.from, eventID: eventID, date: now()))
            return nil
        } catch {
            return "\(error)"
        }
    }

    static func isSafeHeader(_ value: String) -> Bool { !value.contains("\r") && !value.contains("\n") }

    static func compose(_ message: Message, from: String, eventID: String, date: Date) -> Data {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss Z"
        let domain = from.split(separator: "@").last.map(String.init) ?? "receiptgate.invalid"
        let subject = message.subject.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(
            of: "\n", with: " ")
        // The subject is encoded (RFC 2047) so any language fits a 7-bit header.
        let encodedSubject = "=?UTF-8?B?\(Data(subject.utf8).base64EncodedString())?="
        let body = message.text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(
            of: "\n", with: "\r\n")
        let lines = [
            "From: \(from)", "To: \(message.to)", "Subject: \(encodedSubject)",
            "Date: \(formatter.string(from: date))",
            "Message-ID: <\(eventID)@\(domain)>", "MIME-Version: 1.0", "Content-Type: text/plain; charset=utf-8",
            "Content-Transfer-Encoding: 8bit", "", body,
        ]
        return Data(lines.joined(separator: "\r\n").utf8)
    }
}
