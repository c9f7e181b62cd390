import Foundation
import OpenSSLCrypto
import ReceiptCore

/// The pages an e-mail link opens: a minimal form on GET, and the POST (form or JSON) that
/// spends the one-time link — confirming the address and/or setting the password of the account
/// the purchase is linked to.
struct AccountPages: Sendable {
    let core: any DialectCore

    enum Page: Sendable {
        case confirmEmail
        case resetPassword

        var kind: String { self == .confirmEmail ? AccountLink.Kind.confirmEmail : AccountLink.Kind.resetPassword }
        var path: String { self == .confirmEmail ? "/account/confirm-email" : "/account/reset-password" }
        var title: String { self == .confirmEmail ? "Confirm your e-mail address" : "Choose your password" }
        /// A confirmation may keep the current password; a first password is the point of a reset.
        var passwordRequired: Bool { self == .resetPassword }
    }

    func form(_ page: Page, context: RouteContext) -> RouteResponse {
        let token = Self.escape(context.query["token"] ?? "")
        let optional = page.passwordRequired ? "" : " (optional)"
        return .html(
            """
            <!doctype html>
            <html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>\(page.title)</title></head>
            <body><h1>\(page.title)</h1>
            <form method="post" action="\(page.path)">
            <input type="hidden" name="token" value="\(token)">
            <label>New password\(optional): <input type="password" name="password" minlength="8" maxlength="256" autocomplete="new-password"\(page.passwordRequired ? " required" : "")></label>
            <button type="submit">Continue</button>
            </form></body></html>
            """)
    }

    func submit(_ page: Page, _ request: RouteRequest, context: RouteContext) async -> RouteResponse {
        let wantsHTML = !(request.headers["content-type"]?.lowercased().hasPrefix("application/json") ?? false)
        func answer(_ status: Int, _ code: String, _ message: String, username: String? = nil) -> RouteResponse {
            if wantsHTML {
                return .html(
                    "<!doctype html><html><head><meta charset=\"utf-8\"><title>\(page.title)</title></head><body><p>\(Self.escape(message))</p></body></html>",
                    status: status)
            }
            var body = status == 200 ? ["status": code, "message": message] : ["error": code, "message": message]
            if let username { body["username"] = username }
            return .json(body, status: status, headers: [("Cache-Control", "no-store")])
        }
        guard let parameters = FormBody.parameters(request) else {
            return answer(400, "INVALID_FIELD", "send a form or a JSON object of strings")
        }
        guard let token = parameters["token"], !token.isEmpty, token.utf8.count <= 512 else {
            return answer(400, "MISSING_FIELDS", "the link's token is missing")
        }
        let password = parameters["password"].flatMap { $0.isEmpty ? nil : $0 }
        if page.passwordRequired && password == nil { return answer(400, "MISSING_FIELDS", "a password is required") }
        if let password, password.count < 8 || password.utf8.count > 256 {
            return answer(400, "INVALID_FIELD", "the password must be 8 to 256 characters")
        }
        do {
            // Hashed before the link is spent, so a failure here leaves the link usable.
            var hash: String?
            if let password { hash = try await Scrypt.hashPasswordOffThePool(password) }
            // Read first, spent only once it will act: a link that waits for an approval stays usable.
            guard let stored = try await core.tokens.resolve(token, kind: page.kind),
                let link = MailLink.decode(stored.payload),
                stored.accountID == link.account, let client = try await core.client(id: stored.clientID),
                let account = try await core.accounts.account(id: link.account), account.scope == client.scope
            else {
                return answer(400, "INVALID_LINK", "this link is unknown, expired or already used")
            }
            var change: AccountChange, done: String
            switch Self.use(page, link: link, account: account) {
            case .invalid:
                return answer(
                    400, "INVALID_LINK",
                    "this link no longer fits the account (a newer request replaced it, or its address changed)")
            case .waiting(let message):
                return answer(409, "APPROVAL_PENDING", message)
            case .apply(let applied, let message):
                (change, done) = (applied, message)
            }
            if change.emailVerified == true, let address = change.email ?? account.email,
                let holder = try await core.accounts.account(email: address, scope: client.scope), holder.emailVerified,
                holder.id != account.id
            {
                // Another account of this game already holds the address confirmed.
                guard page == .resetPassword else {
                    return answer(409, "EMAIL_TAKEN", "this address is confirmed for another account")
                }
                change.emailVerified = nil
            }
            change.passwordHash = hash
            change.expected = account
            guard try await core.tokens.consume(token, kind: page.kind) != nil else {
                return answer(400, "INVALID_LINK", "this link is unknown, expired or already used")
            }
            guard let updated = try await core.accounts.update(account.id, change) else {
                return answer(400, "INVALID_LINK", "the account changed since this link was read; ask for a new one")
            }
            context.logger.info("account link used", ["account.id": updated.id, "kind": page.kind])
            return answer(
                200, "ok", "\(done) Sign in as \(updated.email ?? updated.username).", username: updated.username)
        } catch {
            context.logger.error("account page failed", ["error": "\(error)"])
            return answer(503, "VERIFIER_ERROR", "please try again")
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "'", with: "&#39;")
    }
}
