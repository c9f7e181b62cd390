import Foundation
public import ReceiptCore

extension SteamProvider {
    /// How recent a ticket's proof must be for `--steam-require-ticket`.
    static let ticketFreshness: TimeInterval = 3600

    /// Item descriptions Steam shows the player: at most 128 characters (InitTxn).
    static let maxDescription = 128

    /// Starts the order with `InitTxn` v3 (partner.steamgames.com/doc/webapi/ISteamMicroTxn#InitTxn):
    /// one line per item, `amount` its total (quantity × unit price) in the unit "Supported
    /// Currencies" gives for the currency. What Steam could only refuse (an item id that is not a
    /// uint32, a quantity beyond int16, an amount off the currency's step) is refused here first.
    public func startOrder(_ request: OrderRequest, context: VerificationContext) async throws -> StartedOrder {
        let parameters = try Self.initParameters(request)
        do {
            let access = try SteamAccess.of(
                client: context.client, credentials: context.credentials, apps: context.appIdentifiers)
            try VerificationChecks.accepts(access.environment, accepted: context.environments)
            if context.client?.setting(Setting.requireTicket) == "on" {
                guard let proven = request.accountProvenAt, now().timeIntervalSince(proven) <= Self.ticketFreshness
                else {
                    throw StoreVerificationError(
                        code: .forbidden, reason: "STEAM_TICKET_REQUIRED",
                        message: "this client starts orders only for a Steam ID proven by a session ticket "
                            + "(POST /v1/steam/authenticate) in the last hour")
                }
            }
            let params = try await api.call(
                "POST", access.microTxn, "InitTxn", version: 3,
                parameters: [("appid", access.appID)] + parameters, key: access.key, deadline: context.deadline)
            return StartedOrder(
                storeTransactionID: params["transid"]?.steamText, approvalURL: params["steamurl"]?.string)
        } catch let error as StoreAPIError {
            throw error.kind == .refused
                ? StoreVerificationError(code: .invalidField, reason: error.reason, message: error.message)
                : error.verificationError
        }
    }

    /// InitTxn's parameters beside `key` and `appid`, or the refusal of a body Steam cannot take.
    static func initParameters(_ request: OrderRequest) throws(StoreVerificationError) -> [(String, String)] {
        func refuse(_ message: String) -> StoreVerificationError {
            StoreVerificationError(code: .invalidField, reason: "INVALID_ORDER", message: message)
        }
        guard UInt64(request.storeAccount) != nil else { throw refuse("field 'steamid' must be a 64-bit Steam ID") }
        let session = request.session ?? "client"
        guard session == "client" || session == "web" else {
            throw refuse("field 'usersession' must be client or web")
        }
        // Valve requires the player's address for a browser session (InitTxn's ipaddress).
        if session == "web" {
            guard let address = request.ipAddress, Self.isIPAddress(address) else {
                throw refuse("field 'ip_address' must be the player's IP address for a web session")
            }
        }
        var parameters: [(String, String)] = [
            ("orderid", request.orderID), ("steamid", request.storeAccount), ("itemcount", String(request.items.count)),
            ("language", request.language ?? "en"), ("currency", request.currency), ("usersession", session),
        ]
        if session == "web", let address = request.ipAddress { parameters.append(("ipaddress", address)) }
        var seen = Set<String>()
        for (index, item) in request.items.enumerated() {
            guard let itemID = UInt32(item.productID), String(itemID) == item.productID else {
                throw refuse("a Steam product id is the item's decimal itemid (a uint32), not \(item.productID)")
            }
            guard seen.insert(item.productID).inserted else {
                throw refuse("item \(item.productID) is listed twice; give it one line with its quantity")
            }
            guard item.quantity <= Int(Int16.max) else { throw refuse("a Steam quantity is at most \(Int16.max)") }
            guard let total = item.totalMilliunits,
                let amount = SteamMoney.amount(milliunits: total, currency: request.currency)
            else {
                throw refuse(
                    "the total of item \(item.productID) (\(item.totalMilliunits ?? 0) milliunits of \(request.currency)) "
                        + "is not an amount Steam takes in that currency")
            }
            guard item.description.count <= maxDescription else {
                throw refuse("a Steam item description is at most \(maxDescription) characters")
            }
            parameters += [
                ("itemid[\(index)]", item.productID), ("qty[\(index)]", String(item.quantity)),
                ("amount[\(index)]", String(amount)), ("description[\(index)]", item.description),
            ]
        }
        return parameters
    }

    static func isIPAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4 { return parts.allSatisfy { UInt8($0) != nil } }
        return text.contains(":") && text.utf8.count <= 45
            && text.unicodeScalars.allSatisfy { $0.isASCII && ($0 == ":" || CharacterSet.alphanumerics.contains($0)) }
    }
}

extension SteamProvider {
    /// The player's wallet currency from `GetUserInfo` v2
    /// (partner.steamgames.com/doc/webapi/ISteamMicroTxn#GetUserInfo: `currency`, `country`,
    /// `state`, `status`), for an order that names none. Throws `StoreVerificationError`.
    public func buyerCurrency(account: String, context: VerificationContext) async throws -> String? {
        guard UInt64(account) != nil else {
            throw StoreVerificationError(
                code: .invalidField, reason: "INVALID_ORDER", message: "field 'steamid' must be a 64-bit Steam ID")
        }
        do {
            let access = try SteamAccess.of(
                client: context.client, credentials: context.credentials, apps: context.appIdentifiers)
            let params = try await api.call(
                "GET", access.microTxn, "GetUserInfo", version: 2,
                parameters: [("appid", access.appID), ("steamid", account)], key: access.key,
                deadline: context.deadline)
            return params["currency"]?.string
        } catch {
            throw error.kind == .refused
                ? StoreVerificationError(code: .invalidField, reason: error.reason, message: error.message)
                : error.verificationError
        }
    }
}
