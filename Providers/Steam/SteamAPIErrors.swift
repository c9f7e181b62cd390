import ReceiptCore

/// Steam's answers as the shared `StoreAPIError`. The partner Web API answers a refusal inside a
/// 200: `{"response": {"result": "Failure", "error": {"errorcode", "errordesc"}}}`; the codes are
/// Appendix B of the microtransactions implementation guide
/// (partner.steamgames.com/doc/features/microtransactions/implementation#error_codes). An HTTP
/// 401/403 is a publisher key Steam refuses (Web API overview), 429 and 5xx its trouble.
enum SteamAPIErrors {
    static let store = "Steam"
    static let credentialsFix =
        "check the client's --steam-publisher-key (a publisher Web API key with microtransaction permission) "
        + "and --steam-app-id"

    /// What each documented code means for the caller. `ISteamUserAuth` numbers its own failures:
    /// 101 is a ticket Steam does not take (invalid, expired, another app's); its other codes are
    /// kept as they come.
    static func failure(code: Int?, description: String?, request: String) -> StoreAPIError {
        if request == "AuthenticateUserTicket", code != 2, code != 4 {
            return StoreAPIError(
                .refused, store: store, reason: "STEAM_TICKET_REFUSED",
                "Steam did not accept the ticket (\(request): \(description.map { String($0.prefix(200)) } ?? "no description"))",
                status: 200, storeCode: code.map(String.init))
        }
        let detail = description.map { String($0.prefix(200)) } ?? "no description"
        let storeCode = code.map(String.init)
        func make(_ kind: StoreAPIError.Kind, _ reason: String, _ message: String) -> StoreAPIError {
            StoreAPIError(
                kind, store: store, reason: reason, "\(message) (\(request): \(detail))", status: 200,
                storeCode: storeCode, fix: kind == .credentialsRefused ? credentialsFix : nil)
        }
        switch code ?? 0 {
        // 2 the operation failed, 4 internal error: Steam's trouble.
        case 2, 4: return make(.unavailable, "STEAM_UNAVAILABLE", "Steam could not complete the call; safe to retry")
        case 3: return make(.refused, "STEAM_INVALID_PARAMETER", "Steam refused a parameter")
        case 5: return make(.refused, "ORDER_NOT_APPROVED", "the player has not approved the order yet")
        case 6: return make(.refused, "ORDER_ALREADY_COMMITTED", "the order was finalized already")
        case 7: return make(.refused, "STEAM_USER_NOT_LOGGED_IN", "the player is not logged in to Steam")
        case 8: return make(.refused, "STEAM_CURRENCY_MISMATCH", "the currency is not the player's wallet currency")
        case 9: return make(.refused, "STEAM_ACCOUNT_UNAVAILABLE", "the Steam account does not exist or is unavailable")
        case 10: return make(.refused, "ORDER_DENIED", "the player denied the order")
        case 11: return make(.refused, "STEAM_RESTRICTED_COUNTRY", "the player is in a country Steam does not sell to")
        case 12...16: return make(.refused, "STEAM_AGREEMENT_REFUSED", "Steam refused the billing agreement")
        case 100: return make(.refused, "STEAM_INSUFFICIENT_FUNDS", "the player's wallet has too little money")
        case 101: return make(.refused, "ORDER_EXPIRED", "the time to finalize the order has passed")
        case 102, 103: return make(.refused, "STEAM_ACCOUNT_DISABLED", "the Steam account may not purchase")
        case 104: return make(.refused, "STEAM_FRAUD_DENIED", "Steam denied the order for fraud")
        case 105: return make(.refused, "STEAM_NO_PAYMENT_METHOD", "the player has no cached payment method")
        case 106: return make(.refused, "STEAM_SPENDING_LIMIT", "the order exceeds the agreement's spending limit")
        case 107:
            return make(.refused, "STEAM_PENDING_ORDER", "the player has an order pending that must be finished first")
        default: return make(.refused, "STEAM_REQUEST_REFUSED", "Steam refused the call")
        }
    }

    /// An HTTP status other than 200.
    static func answered(_ status: Int, request: String, retryAfter: Duration?) -> StoreAPIError {
        switch status {
        case 401, 403:
            return StoreAPIError(
                .credentialsRefused, store: store, reason: "STEAM_KEY_REFUSED",
                "Steam refused the client's publisher key for \(request)", status: status, fix: credentialsFix)
        case 429, 500...599:
            return unavailable("\(request) answered HTTP \(status)", status: status, retryAfter: retryAfter)
        default:
            return StoreAPIError(
                .refused, store: store, reason: "STEAM_REQUEST_REFUSED", "Steam refused \(request) (HTTP \(status))",
                status: status)
        }
    }

    static func unavailable(_ detail: String, status: Int? = nil, retryAfter: Duration? = nil) -> StoreAPIError {
        StoreAPIError(
            .unavailable, store: store, reason: "STEAM_UNAVAILABLE", "Steam did not answer: \(detail); safe to retry",
            status: status, retryAfter: retryAfter)
    }

    static func malformed(_ detail: String) -> StoreAPIError {
        StoreAPIError(.malformedAnswer, store: store, reason: "STEAM_INVALID_RESPONSE", detail, status: 200)
    }

    static func notConfigured(_ detail: String) -> StoreAPIError {
        StoreAPIError(.notConfigured, store: store, reason: "STEAM_NOT_CONFIGURED", detail, fix: credentialsFix)
    }
}
