package import Foundation
package import HTTPClient
package import HTTPServer
package import Steam
package import TestSupport

/// A local stand-in for Steam's partner Web API on loopback, speaking its wire format
/// (partner.steamgames.com/doc/webapi/ISteamMicroTxn): `POST` bodies form-encoded and `GET`
/// queries, each with the publisher `key`; answers `{"response": {"result": "OK", "params": {…}}}`
/// or `{"response": {"result": "Failure", "error": {"errorcode", "errordesc"}}}` in a 200. It keeps
/// the orders `InitTxn` opened, lets a test approve or decline them as the player would in the
/// overlay, counts every charge `FinalizeTxn` makes, and lists orders in `GetReport` by `time`.
package final class FakeSteam: Sendable {
    package static let appID = "480"
    package static let publisherKey = "0123456789ABCDEF0123456789ABCDEF"
    package static let steamID = "76561197960287930"

    /// An order as the fake holds it.
    package struct Order: Sendable {
        package var orderID: String
        package var transID: String
        package var steamID: String
        package var appID: String
        package var currency: String
        package var status: String
        package var time: Date
        package var items: [Item]
        package var sandbox: Bool
    }

    package struct Item: Sendable {
        package var itemID: String
        package var quantity: Int
        package var amount: Int64
        package var status: String
    }

    package final class State: Sendable {
        package let orders = LockedBox<[String: Order]>([:])
        /// Successful FinalizeTxn calls: each one charged the player.
        package let charges = LockedBox<Int>(0)
        /// Every call: its method name and its parameters, `key` left out.
        package let calls = LockedBox<[(name: String, parameters: [String: String])]>([])
        /// The next FinalizeTxn is carried out and its answer lost (the connection's answer is a 502).
        package let loseNextFinalizeAnswer = LockedBox(false)
        package let clock = LockedBox(Date())
        package let nextTransID = LockedBox<Int64>(9_000_000_000)
        /// Session tickets Steam would accept: the hex ticket, the Steam ID it proves, its bans.
        /// Each Steam ID's wallet currency, as GetUserInfo answers it (USD when not set).
        package let walletCurrencies = LockedBox<[String: String]>([:])
        package let tickets = LockedBox<[String: (steamID: String, vacBanned: Bool, publisherBanned: Bool)]>([:])
    }

    package let state = State()
    package let server: HTTPServer

    package init() throws {
        server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: Self.routes(state))
        try server.start()
    }

    package var baseURL: String { "http://127.0.0.1:\(server.port)" }
    package func shutdown() async { await server.shutdown() }

    /// The provider's configuration for this fake.
    package func configuration(reportPageSize: Int = 1000) -> SteamConfiguration {
        var configuration =
            (try? SteamConfiguration.fromEnvironment(["RECEIPTGATE_STEAM_API_URL": baseURL])) ?? SteamConfiguration()
        configuration.reportPageSize = reportPageSize
        return configuration
    }

    /// An HTTP client that retries quickly, as tests want.
    package static func http() -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.retry = .init(maxAttempts: 3, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        configuration.timeout = .seconds(60)
        return HTTPClient(configuration)
    }

    package var charges: Int { state.charges.get() }
    package func calls(_ name: String) -> [[String: String]] {
        state.calls.get().filter { $0.name == name }.map(\.parameters)
    }
    package func order(_ orderID: String) -> Order? { state.orders.get()[orderID] }

    /// A session ticket for `steamID`, as `GetAuthTicketForWebApi` would hand the game (hex).
    package func issueTicket(
        for steamID: String = FakeSteam.steamID, vacBanned: Bool = false, publisherBanned: Bool = false
    )
        -> String
    {
        let ticket = (0..<60).map { _ in String(format: "%02X", UInt8.random(in: 0...255)) }.joined()
        state.tickets.update { $0[ticket] = (steamID, vacBanned, publisherBanned) }
        return ticket
    }

    /// The player approves the order in the overlay.
    package func approve(_ orderID: String) { move(orderID, to: "Approved") }
    /// The player declines it.
    package func decline(_ orderID: String) { move(orderID, to: "Failed", items: "Failed") }

    /// The order changes as Steam's report tells it, at `at` (or a second after the last change).
    package func move(
        _ orderID: String, to status: String, items itemStatus: String? = nil, only: Set<String>? = nil, at: Date? = nil
    ) {
        state.orders.update { orders in
            guard var order = orders[orderID] else { return }
            order.status = status
            let time =
                at
                ?? state.clock.update { clock -> Date in
                    clock = clock.addingTimeInterval(1)
                    return clock
                }
            order.time = time
            for index in order.items.indices where only == nil || only?.contains(order.items[index].itemID) == true {
                order.items[index].status = itemStatus ?? status
            }
            orders[orderID] = order
        }
    }
}
