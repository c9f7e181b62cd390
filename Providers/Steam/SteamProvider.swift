public import Foundation
package import HTTPClient
public import ReceiptCore

extension StoreID {
    public static let steam = StoreID(rawValue: "steam")
}

/// Steam's in-game purchases, with the service as the game's purchase server
/// (partner.steamgames.com/doc/features/microtransactions/implementation): an order is started
/// with `InitTxn` (`POST /v1/orders`), approved by the player in the Steam overlay, and finished
/// by a verification of its order id (`FinalizeTxn`, then `QueryTxn` says it succeeded for the
/// app and the player's Steam account). Refunds and chargebacks are read from the transaction
/// report (`GetReport`). Every call carries the client's publisher key; nothing is shared
/// between clients.
public struct SteamProvider: StoreProvider, OrderStarting, AccountAuthenticating {
    public let store = StoreID.steam
    public let configuration: SteamConfiguration
    let api: SteamAPI
    let logger: Logger
    let now: @Sendable () -> Date

    /// Client settings: the publisher key sealed, the rest plain.
    public enum Setting {
        public static let publisherKey = "steam.publisher_key"
        public static let sandbox = "steam.sandbox"
        public static let refuseBanned = "steam.refuse_banned"
        public static let requireTicket = "steam.require_ticket"
    }

    package init(
        configuration: SteamConfiguration, http: HTTPClient = HTTPClient(), logger: Logger = Logger(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        api = SteamAPI(baseURL: configuration.apiURL, http: http, now: now)
    }

    /// From the environment; throws `ConfigurationInvalid`.
    public static func fromEnvironment(
        _ environment: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }
    ) throws -> SteamProvider {
        SteamProvider(configuration: try SteamConfiguration.fromEnvironment(environment), now: now)
    }

    /// Orders, their verification, and the report's poll when it is on.
    public var registration: StoreRegistration {
        StoreRegistration(
            Self.declaration, verifier: self,
            poller: configuration.reportInterval.map { SteamReportPoller(provider: self, interval: $0) },
            orderStarter: self, accountAuthenticator: self, orderRefunder: self)
    }
}

/// What one client asks Steam with: its app, its publisher key, and whether it tests in the sandbox.
struct SteamAccess: Sendable {
    let appID: String
    let key: String
    let sandbox: Bool

    var environment: StoreEnvironment { sandbox ? .sandbox : .production }
    var microTxn: String { SteamAPI.microTxn(sandbox: sandbox) }

    static func of(
        client: ClientInfo?, credentials: [String: String], apps: Set<String>
    ) throws(StoreAPIError) -> SteamAccess {
        guard let key = credentials[SteamProvider.Setting.publisherKey], !key.isEmpty else {
            throw SteamAPIErrors.notConfigured("this client has no Steam publisher key (--steam-publisher-key)")
        }
        guard let appID = apps.sorted().first else {
            throw SteamAPIErrors.notConfigured("this client has no Steam app id (--steam-app-id)")
        }
        return SteamAccess(
            appID: appID, key: key, sandbox: client?.setting(SteamProvider.Setting.sandbox) == "on")
    }

    static func of(_ owner: ClientWithStoreCredentials) throws(StoreAPIError) -> SteamAccess {
        try of(
            client: owner.client, credentials: owner.credentials,
            apps: Set(owner.client.appIdentifiers(SteamProvider.appKind)))
    }
}
