import Foundation
import OpenSSLCrypto
import ReceiptCore

/// `POST /iap`: prove the purchase, then — in the record's own database transaction — find the
/// account it is linked to, or link it to the caller's account, or create one; the primary key
/// of the links decides under concurrency. Tokens and the e-mail's one-time link exist before
/// the transaction (the closure cannot wait on anything); a mail is enqueued in it.
///
/// Only evidence the buyer's device holds (a signed transaction, an app receipt, a Google
/// purchase token) stands in for a sign-in. A bare App Store transaction id is no secret: it
/// never signs anyone in or creates an account, and links only to the caller's own account when
/// the purchase carries that account's `app_account_token`.
struct IAPHandler: Sendable {
    let core: any DialectCore
    let tokens: AccessTokens

    struct Answer: Encodable {
        let access_token: String
        let refresh_token: String
        let account_switched: Bool
        let email_confirmation_required: Bool
        let auto_account_created: Bool
        /// The UUID the app sets as `appAccountToken` when this account buys.
        let app_account_token: String
    }

    /// What the record's transaction decided.
    enum Decision: Sendable {
        case refused(TransactionState)
        case linked(account: AccountRecord, created: Bool, mailed: Bool)
    }

    /// The App Store provider's reason when it has no Server API key to look a transaction id up with.
    static let transactionLookupNotConfigured = "TRANSACTION_LOOKUP_NOT_CONFIGURED"
    /// The evidence does not show the caller owns the purchase (a bare transaction id).
    static let ownershipNotProven = "OWNERSHIP_NOT_PROVEN"

    /// Another request created the account first; this transaction is rolled back and retried.
    struct LostTheRace: Error {}

    func handle(_ request: RouteRequest, context: RouteContext) async -> RouteResponse {
        do {
            return try await answer(request, context: context)
        } catch let problem as Problem {
            return problem.response
        } catch let refusal as RouteRefusal {
            var response = Problem(refusal.code, refusal.message).response
            if let retryAfter = refusal.retryAfter { response.headers.append(("Retry-After", String(retryAfter))) }
            return response
        } catch let refused as StoreVerificationError where refused.reason == Self.transactionLookupNotConfigured {
            return Problem(
                .invalidField,
                "a bare 'transaction_id' needs the App Store Server API transaction lookup, which is not configured here; "
                    + "send 'subscription_transaction_jws' or 'app_receipt_base64'"
            ).response
        } catch let refused as StoreVerificationError {
            context.logger.info("iap refused", ["error.code": refused.code.rawValue, "error.reason": refused.reason])
            return Problem(refused.code, refused.message).response
        } catch {
            context.logger.error("iap failed", ["error": "\(error)"])
            return Problem(.verifierError, "the purchase could not be processed now; safe to retry").response
        }
    }

    static func notOwner(_ message: String) -> Problem {
        Problem(code: ownershipNotProven, message: message, status: 422)
    }

    private func answer(_ request: RouteRequest, context: RouteContext) async throws -> RouteResponse {
        let headers = try IAPRequest.headers(request.headers).get()
        let iap = try IAPRequest.parse(headers: headers, body: request.body, stores: core.stores).get()
        let (store, client) = try await tenant(of: iap)
        let bearer = try await caller(request.headers["authorization"], client: client)
        let bareID = iap.evidenceKind == .transactionID
        if bareID {
            guard let bearer else {
                throw Self.notOwner(
                    "a bare '\(iap.store.vendorCode.lowercased()).transaction_id' proves nothing about who is calling: send it with the access token of the account "
                        + "whose app_account_token the purchase carries, or send the signed transaction or the app receipt"
                )
            }
            try await core.checkRateLimit(AccountLink.Limits.lookupsPerAccount, key: bearer.account.id)
        }
        Self.logCall(headers, client: client, context: context)

        var verification = VerificationRequest(store: store, evidence: iap.evidence, requestID: context.requestID)
        verification.appIdentifier = iap.appIdentifier
        verification.evidenceKind = iap.evidenceKind
        verification.transactionID = iap.namedTransactionID
        verification.productID = iap.productID
        verification.evidenceFields = iap.evidenceFields
        let proven = try await core.prove(verification, client: client)
        if bareID, let bearer, proven.purchase.accountToken?.lowercased() != bearer.account.appAccountToken.lowercased()
        {
            throw Self.notOwner(
                "the purchase was not made with this account's app_account_token; a bare transaction id links only such a purchase"
            )
        }
        let key = PurchaseKey(
            store: proven.purchase.store,
            originalTransactionID: proven.purchase.originalTransactionID ?? proven.purchase.transactionID)
        try await core.checkRateLimit(
            AccountLink.Limits.iapPerPurchase, key: "\(key.store.rawValue):\(key.originalTransactionID)")
        let decision = try await link(
            proven, key: key, iap: iap, client: client, bearer: bearer?.account, context: context)
        return try await respond(decision, iap: iap, client: client, tokenAccount: bearer?.account)
    }

    /// The store the request's evidence is for, and the client that registered its app there.
    private func tenant(of iap: IAPRequest) async throws -> (StoreID, ClientInfo) {
        let store = iap.store.store
        guard let client = try await core.client(forAppIdentifier: iap.appIdentifier, store: store) else {
            throw Problem(.notFound, "no client registered \(iap.appIdentifier)")
        }
        return (store, client)
    }

    /// Recorded for fraud review: who called, from where, with what.
    private static func logCall(_ headers: IAPRequest.Headers, client: ClientInfo, context: RouteContext) {
        context.logger.info(
            "iap call",
            [
                "client.id": client.clientID, "caller.address": context.callerAddress ?? "unknown",
                "forwarded.for": headers.forwardedFor ?? "", "device": headers.deviceModel,
                "os": "\(headers.os) \(headers.osVersion)",
                "app.version": headers.appVersion, "sdk.version": headers.sdkVersion,
            ])
        if headers.forwardedForIgnored {
            context.logger.info(
                "iap x-forwarded-for ignored: not a list of IP addresses", ["client.id": client.clientID])
        }
    }

    /// Records the purchase and links it to an account, in one database transaction.
    private func link(
        _ proven: ProvenPurchase, key: PurchaseKey, iap: IAPRequest, client: ClientInfo, bearer: AccountRecord?,
        context: RouteContext
    ) async throws -> Decision {
        // Decided before the transaction (and re-checked in it): which account a mail would be
        // for, and so what it says and where it goes.
        let bareID = iap.evidenceKind == .transactionID
        let linkedBefore = try await core.accounts.linkedAccount(key, scope: client.scope)
        if bareID, let linkedBefore, linkedBefore.id != bearer?.id {
            throw Self.notOwner("the purchase belongs to another account; only its receipt can sign in to it")
        }
        let newAccountID = "acc_" + Hex.encode(SecureRandom.bytes(12))
        let mails = try await plannedMails(
            iap.email, for: linkedBefore ?? bearer, newAccountID: newAccountID, client: client, context: context)
        var generatedHash: String?
        if linkedBefore == nil && bearer == nil {
            generatedHash = try await Scrypt.hashPasswordOffThePool(Base64.urlEncode(SecureRandom.bytes(24)))
        }
        let decide = Self.decider(
            key: key, tokenAccount: bearer, bareID: bareID, mails: mails, client: client,
            draft: AccountDraft(
                id: newAccountID, client: client, username: Self.generatedUsername(), email: iap.email,
                passwordHash: generatedHash, attribution: iap.attribution))
        do {
            return try await core.record(proven, client: client, effects: decide).1
        } catch is LostTheRace {
            // The other request's account committed first: this one joins it (and creates nothing).
            return try await core.record(proven, client: client, effects: decide).1
        }
    }

    private func respond(
        _ decision: Decision, iap: IAPRequest, client: ClientInfo, tokenAccount: AccountRecord?
    ) async throws -> RouteResponse {
        switch decision {
        case .refused(let state):
            throw Problem(
                code: state == .refunded ? "PURCHASE_REFUNDED" : "PURCHASE_REVOKED",
                message: "the purchase was \(state.rawValue); it links no account", status: 422)
        case .linked(let account, let created, let mailed):
            let pair = try await tokens.issue(account: account, clientID: client.clientID)
            let answer = Answer(
                access_token: pair.accessToken, refresh_token: pair.refreshToken,
                account_switched: tokenAccount.map { $0.id != account.id } ?? false,
                email_confirmation_required: mailed, auto_account_created: created && iap.email == nil,
                app_account_token: account.appAccountToken)
            return .json(answer, headers: [("Cache-Control", "no-store")])
        }
    }

    /// The account of the bearer token, if one is sent. An expired or invalid one is a 401, never
    /// a silent new account (that would orphan the purchase): the app refreshes and calls again.
    private func caller(_ authorization: String?, client: ClientInfo) async throws -> AccessTokens.Bearer? {
        guard authorization != nil else { return nil }
        guard let verified = try await tokens.verify(authorization: authorization),
            verified.client.scope == client.scope
        else {
            throw Problem(.unauthorized, "the access token is invalid, expired, or for another game")
        }
        return verified
    }

    static func generatedUsername() -> String {
        "player_"
            + Base64.urlEncode(SecureRandom.bytes(9)).lowercased().replacingOccurrences(of: "-", with: "x")
            .replacingOccurrences(of: "_", with: "y")
    }
}
