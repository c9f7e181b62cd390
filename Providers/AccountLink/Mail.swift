import Foundation
import ReceiptCore

/// What a one-time e-mail link stands for, bound when it is issued: the account it acts on, the
/// address it was sent to, and the address it confirms. Used, it acts only if the account is
/// still in the state the link was issued for (see `AccountPages`).
struct MailLink: Codable, Sendable {
    let account: String
    /// Where the mail went: the new address itself, or the account's confirmed address when that
    /// one must approve a change.
    let sent_to: String
    /// The address the link confirms (for a first password: the account's own).
    let email: String

    func encoded() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: try encoder.encode(self), as: UTF8.self)
    }

    static func decode(_ payload: String?) -> MailLink? {
        payload.flatMap { try? JSONDecoder().decode(MailLink.self, from: Data($0.utf8)) }
    }
}

/// A confirmation or first-password mail, as the outbox carries it: `{"to", "subject", "text"}`.
struct Mail: Sendable {
    let kind: String
    let link: MailLink
    let token: String
    let issuer: String
    /// The account's address is confirmed: this mail is one of two, the approval at that address
    /// and the confirmation at the new one, and the change needs both.
    let needsApproval: Bool

    var to: String { link.sent_to }
    /// Sent to the confirmed address to approve a change to another one.
    var approvesChange: Bool { link.sent_to.lowercased() != link.email.lowercased() }

    var url: String {
        let path = kind == AccountLink.Kind.resetPassword ? "/account/reset-password" : "/account/confirm-email"
        return "\(issuer)\(path)?token=\(token)"
    }

    var subject: String {
        if kind == AccountLink.Kind.resetPassword { return "Set the password of your new account" }
        return approvesChange ? "Approve a new e-mail address for your account" : "Confirm your e-mail address"
    }

    var text: String {
        let what =
            if kind == AccountLink.Kind.resetPassword {
                "An account was created for your purchase. Choose its password here"
            } else if approvesChange {
                "Someone signed in with a purchase of your account and asked to change its e-mail address to \(link.email). "
                    + "Only if that was you, approve it (and set a new password if you like) here"
            } else if needsApproval {
                "Confirm this e-mail address for your account here. The change also needs the approval mailed to the account's "
                    + "current address; this link works once that is given"
            } else {
                "Confirm this e-mail address for your account (and set a new password if you like) here"
            }
        return
            "\(what):\n\n\(url)\n\nThe link works once, for 24 hours. If you did not ask for this, ignore this mail.\n"
    }

    func message(clientID: String) throws -> OutboxMessage {
        let body: [String: String] = ["to": to, "subject": subject, "text": text]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return OutboxMessage(
            clientID: clientID, target: .email,
            type: kind == AccountLink.Kind.resetPassword ? "email.password_reset" : "email.confirm",
            aggregateKey: "account:\(link.account)", body: try encoder.encode(body))
    }
}
