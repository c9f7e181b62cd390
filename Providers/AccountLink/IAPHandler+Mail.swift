import Foundation
import ReceiptCore

extension IAPHandler {
    /// The mails `customer_details.email` asks for, each with its one-time link bound to the
    /// account and the addresses; none when there is nothing to confirm. An account whose address
    /// is confirmed changes it only when that address approves and the new one confirms: two
    /// mails, one to each. Over the per-account or per-recipient limit, no mail is planned (the
    /// purchase is still recorded and linked), so nobody can lock an address out by spending its
    /// budget.
    func plannedMails(
        _ email: String?, for existing: AccountRecord?, newAccountID: String, client: ClientInfo,
        context: RouteContext
    ) async throws -> [Mail] {
        guard let email else { return [] }
        var links: [(kind: String, link: MailLink)] = []
        if let account = existing {
            let confirmed = account.emailVerified ? account.email : nil
            if confirmed?.lowercased() == email.lowercased() { return [] }
            if let confirmed {
                links.append(
                    (AccountLink.Kind.confirmEmail, MailLink(account: account.id, sent_to: confirmed, email: email)))
            }
            links.append((AccountLink.Kind.confirmEmail, MailLink(account: account.id, sent_to: email, email: email)))
        } else {
            links.append(
                (AccountLink.Kind.resetPassword, MailLink(account: newAccountID, sent_to: email, email: email)))
        }
        do {
            try await core.checkRateLimit(AccountLink.Limits.mailPerAccount, key: links[0].link.account)
            for recipient in Set(links.map { $0.link.sent_to.lowercased() }) {
                try await core.checkRateLimit(AccountLink.Limits.mailPerRecipient, key: recipient)
            }
        } catch is RouteRefusal {
            context.logger.info("iap mail not sent: mail limit reached", ["account.id": links[0].link.account])
            return []
        }
        var mails: [Mail] = []
        for (kind, link) in links {
            let issued = try await core.tokens.issue(
                TokenRequest(
                    kind: kind, clientID: client.clientID, accountID: link.account,
                    lifetime: AccountLink.emailLinkLifetime, payload: try link.encoded()))
            mails.append(
                Mail(
                    kind: kind, link: link, token: issued.token, issuer: core.signer.issuer,
                    needsApproval: links.count > 1))
        }
        return mails
    }

    /// Enqueues the planned mails if the transaction ended with the account they were planned
    /// for, and makes their address the account's one pending confirmation (an earlier link stops
    /// working, an earlier approval no longer counts).
    static func send(
        _ mails: [Mail], to account: AccountRecord, client: ClientInfo, scope: any RecordScope
    ) throws -> Bool {
        guard let first = mails.first, first.link.account == account.id else { return false }
        if first.kind == AccountLink.Kind.confirmEmail {
            try scope.setPendingEmail(first.link.email, accountID: account.id)
        }
        for mail in mails { try scope.enqueue(try mail.message(clientID: client.clientID)) }
        return true
    }
}
