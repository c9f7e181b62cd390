import ReceiptCore

extension AccountPages {
    /// What using a mail link would do.
    enum LinkUse {
        /// Apply this change; the message says what happened.
        case apply(AccountChange, String)
        /// Not yet: the change needs something else first (the link stays usable).
        case waiting(String)
        /// The account is no longer in the state the link was issued for.
        case invalid
    }

    /// The one rule for mail links. A confirmation works only for the account's one pending
    /// address. An account with a confirmed address changes it only when both links are used:
    /// the approval sent to the confirmed address, then the confirmation sent to the new one. A
    /// first password works only while the account still has the address it was sent to.
    static func use(_ page: Page, link: MailLink, account: AccountRecord) -> LinkUse {
        let sentTo = link.sent_to.lowercased(), email = link.email.lowercased()
        switch page {
        case .confirmEmail:
            guard account.pendingEmail?.lowercased() == email else { return .invalid }
            let confirmed = account.emailVerified ? account.email?.lowercased() : nil
            let confirmation = AccountChange(
                email: link.email, emailVerified: true, pendingEmail: .some(nil), pendingEmailApproved: false)
            guard let confirmed, confirmed != email else {
                return sentTo == email ? .apply(confirmation, "Your e-mail address is confirmed.") : .invalid
            }
            if sentTo == confirmed {
                return .apply(
                    AccountChange(pendingEmailApproved: true),
                    "The change is approved. It takes effect once \(link.email) is confirmed from the mail sent there.")
            }
            guard sentTo == email else { return .invalid }
            guard account.pendingEmailApproved else {
                return .waiting(
                    "This change also needs the approval mailed to the account's current address; use this link again after that."
                )
            }
            return .apply(confirmation, "Your e-mail address is confirmed.")
        case .resetPassword:
            guard account.email?.lowercased() == sentTo else { return .invalid }
            // Using the link proves the mailbox.
            return .apply(AccountChange(emailVerified: true), "Your password is set.")
        }
    }
}
