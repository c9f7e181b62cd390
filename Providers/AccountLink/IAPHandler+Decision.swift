import ReceiptCore

extension IAPHandler {
    /// What the record's transaction does once the purchase is on record: refuse a refunded or
    /// revoked one; else answer the account the purchase is linked to, or link it to the caller's
    /// account, or create one (the links' primary key decides under concurrency). A bare
    /// transaction id only ever ends on the caller's own account. The account the purchase ends
    /// linked to is the one its store is told of (`RecordScope.tellStore`): a purchase that
    /// carried no account token (bought outside the app) then carries that account's
    /// `app_account_token` in its renewals and notifications; the core sends it once per purchase.
    static func decider(
        key: PurchaseKey, tokenAccount: AccountRecord?, bareID: Bool, mails: [Mail], client: ClientInfo,
        draft: AccountDraft
    ) -> @Sendable (VerificationOutcome, any RecordScope) throws -> Decision {
        { outcome, scope in
            if bareID, tokenAccount == nil {
                throw notOwner("a bare transaction id needs the access token of its account")
            }
            if outcome.transaction.state.isWithdrawn { return .refused(outcome.transaction.state) }
            if let status = outcome.subscription?.status, status == .refunded || status == .revoked {
                return .refused(status == .refunded ? .refunded : .revoked)
            }
            if let linked = try scope.linkedAccount(key) {
                // Linked meanwhile to someone else: a bare id still proves nothing about it.
                if bareID, linked.id != tokenAccount?.id { throw notOwner("the purchase belongs to another account") }
                try scope.tellStore(accountToken: linked.appAccountToken, for: outcome.transaction)
                return .linked(
                    account: linked, created: false, mailed: try send(mails, to: linked, client: client, scope: scope))
            }
            if let tokenAccount {
                let winner = try scope.linkPurchase(key, to: tokenAccount.id)
                if bareID, winner != tokenAccount.id { throw notOwner("the purchase belongs to another account") }
                let account = winner == tokenAccount.id ? tokenAccount : try scope.linkedAccount(key) ?? tokenAccount
                try scope.tellStore(accountToken: account.appAccountToken, for: outcome.transaction)
                return .linked(
                    account: account, created: false, mailed: try send(mails, to: account, client: client, scope: scope)
                )
            }
            let created = try scope.createAccount(draft)
            guard try scope.linkPurchase(key, to: created.id) == created.id else { throw LostTheRace() }
            try scope.tellStore(accountToken: created.appAccountToken, for: outcome.transaction)
            return .linked(
                account: created, created: true, mailed: try send(mails, to: created, client: client, scope: scope))
        }
    }
}
