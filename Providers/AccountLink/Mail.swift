public import Foundation
public import ReceiptCore

/// What a one-time e-mail link stands for: an address and the purchase whose account it is for
/// (the account is found through the link when the mail is used, so it is the one the purchase
/// ended up with, whatever happened concurrently).
struct MailLink: Codable, Sendable {
    let email: String
    let store: String
    let original: String

    var key: PurchaseKey { PurchaseKey(store: StoreID(rawValue: store), originalTransactionID: original) }

    var encoded: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return String(decoding: (try? encoder.encode(self)) ?? Data(), as: UTF8.self)
    }

    static func decode(_ payload: String?) -> MailLink? {
        payload.flatMap { try? JSONDecoder().decode(MailLink.self, from: Data($0.utf8)) }
    }
}

/// A confirmation or first-password mail, as the outbox carries it: `{"to", "subject", "text"}`.
struct Mail: Sendable {
    let kind: String
    let to: String
    let token: String
    let issuer: String

    var link: String {
        let path = kind == AccountLink.Kind.resetPassword ? "/account/reset-password" : "/account/confirm-email"
        return "\(issuer)\(path)?token=\(token)"
    }

    var subject: String {
        kind == AccountLink.Kind.resetPassword ? "Set the password of your new account" : "Confirm your e-mail address"
    }

    var text: String {
        let what = kind == AccountLink.Kind.resetPassword
            ? "An account was created for your purchase. Choose its password here"
            : "Confirm this e-mail address for your account (and set a new password if you like) here"
        return "\(what):\n\n\(link)\n\nThe link works once, for 24 hours. If you did not ask for this, ignore this mail.\n"
    }

    func message(clientID: String, accountID: String) -> OutboxMessage {
        let body: [String: String] = ["to": to, "subject": subject, "text": text]
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return OutboxMessage(clientID: clientID, target: .email,
                             type: kind == AccountLink.Kind.resetPassword ? "email.password_reset" : "email.confirm",
                             aggregateKey: "account:\(accountID)", body: (try? encoder.encode(body)) ?? Data())
    }
}
