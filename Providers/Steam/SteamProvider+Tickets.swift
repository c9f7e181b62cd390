import Foundation
import JSON
public import ReceiptCore

extension SteamProvider {
    /// Checks a session ticket (`GetAuthTicketForWebApi`, hex) with
    /// `ISteamUserAuth/AuthenticateUserTicket` v1 for the client's app
    /// (partner.steamgames.com/doc/webapi/ISteamUserAuth#AuthenticateUserTicket); its answer's
    /// `params` carry `steamid`, `ownersteamid`, `vacbanned` and `publisherbanned` (as Steam's
    /// Web API answers them; the page names only the Steam ID). With `--steam-refuse-banned on`
    /// a banned owner is refused (403). Throws `StoreVerificationError`.
    public func authenticate(
        ticket: String, identity: String?, context: VerificationContext
    ) async throws -> AuthenticatedAccount {
        guard ticket.allSatisfy(\.isHexDigit), ticket.utf8.count.isMultiple(of: 2) else {
            throw StoreVerificationError(
                code: .invalidField, reason: "MALFORMED_TICKET", message: "a Steam session ticket is hexadecimal text")
        }
        let params: [String: JSONValue]
        switch await ask(ticket: ticket, identity: identity, context: context) {
        case .success(let answered): params = answered
        case .failure(let error): throw error.verificationError
        }
        guard let steamID = params["steamid"]?.steamText, UInt64(steamID) != nil else {
            throw SteamAPIErrors.malformed("Steam's AuthenticateUserTicket answer names no Steam ID").verificationError
        }
        let owner = params["ownersteamid"]?.steamText ?? steamID
        let vacBanned = params["vacbanned"]?.flag ?? false
        let publisherBanned = params["publisherbanned"]?.flag ?? false
        if vacBanned || publisherBanned, context.client?.setting(Setting.refuseBanned) == "on" {
            throw StoreVerificationError(
                code: .forbidden, reason: "STEAM_ACCOUNT_BANNED",
                message:
                    "the ticket's owner is \(vacBanned ? "VAC" : "publisher")-banned and this client refuses banned accounts"
            )
        }
        let answer = TicketAnswer(
            steamID: steamID, ownerSteamID: owner, vacBanned: vacBanned, publisherBanned: publisherBanned)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return AuthenticatedAccount(account: steamID, answer: try encoder.encode(answer))
    }

    /// AuthenticateUserTicket's `params`, or why it failed.
    func ask(
        ticket: String, identity: String?, context: VerificationContext
    ) async -> Result<[String: JSONValue], StoreAPIError> {
        do {
            let access = try SteamAccess.of(
                client: context.client, credentials: context.credentials, apps: context.appIdentifiers)
            return .success(
                try await api.call(
                    "GET", "ISteamUserAuth", "AuthenticateUserTicket", version: 1,
                    parameters: [("appid", access.appID), ("ticket", ticket)]
                        + (identity.map { [("identity", $0)] } ?? []),
                    key: access.key, deadline: context.deadline))
        } catch {
            return .failure(error)
        }
    }

    struct TicketAnswer: Encodable {
        let steamID: String
        let ownerSteamID: String
        let vacBanned: Bool
        let publisherBanned: Bool

        enum CodingKeys: String, CodingKey {
            case steamID = "steamid", ownerSteamID = "owner_steamid", vacBanned = "vac_banned"
            case publisherBanned = "publisher_banned"
        }
    }
}
