public import Foundation
public import ReceiptCore

extension IAPHandler {
    /// The mail `customer_details.email` asks for, with its one-time link bound to the account
    /// and the addresses, or nil when there is nothing to confirm. An account whose address is
    /// confirmed changes it only with that address's approval: the mail goes there, not to the
    /// new one. Limited per account and per recipient before anything is issued.
    func plannedMail(_ email: String?, for existing: AccountRecord?, newAccountID: String, client: ClientInfo) async throws -> Mail? {
        guard let email else { return nil }
        let kind: String, link: MailLink
        if let account = existing {
            let confirmed = account.emailVerified ? account.email : nil
            if confirmed?.lowercased() == email.lowercased() { return nil }
            kind = AccountLink.Kind.confirmEmail
            link = MailLink(account: account.id, sent_to: confirmed ?? email, email: email)
        } else {
            kind = AccountLink.Kind.resetPassword
            link = MailLink(account: newAccountID, sent_to: email, email: email)
        }
        try await core.checkRateLimit(AccountLink.Limits.mailPerAccount, key: link.account)
        try await core.checkRateLimit(AccountLink.Limits.mailPerRecipient, key: link.sent_to.lowercased())
        let issued = try await core.tokens.issue(TokenRequest(kind: kind, clientID: client.clientID, accountID: link.account,
                                                              lifetime: AccountLink.emailLinkLifetime, payload: try link.encoded()))
        return Mail(kind: kind, link: link, token: issued.token, issuer: core.signer.issuer)
    }

    /// Enqueues the planned mail if the transaction ended with the account it was planned for,
    /// and makes its address the account's one pending confirmation (an earlier link stops working).
    static func send(_ mail: Mail?, to account: AccountRecord, client: ClientInfo, scope: any RecordScope) throws -> Bool {
        guard let mail, mail.link.account == account.id else { return false }
        if mail.kind == AccountLink.Kind.confirmEmail { try scope.setPendingEmail(mail.link.email, accountID: account.id) }
        try scope.enqueue(try mail.message(clientID: client.clientID))
        return true
    }
}
