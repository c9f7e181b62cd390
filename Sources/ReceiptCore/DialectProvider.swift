public import Foundation

/// A client (tenant) as plugins see it: never its secret.
public struct ClientInfo: Sendable, Equatable {
    public let clientID: String
    public let gameID: Int64?
    /// The apps the client registered, by identifier kind (`AppIdentifierKind.name`).
    public var appIdentifiers: [String: [String]]
    public var environments: Set<StoreEnvironment>
    /// Plugins' own settings, by name (`<plugin>.<setting>`). Never secrets.
    public var settings: [String: [String]]
    /// The version the client's record had when these credentials were checked, where the core
    /// knows it (a directly presented secret): something issued on the strength of that check
    /// passes it on (`TokenRequest.clientVersion`), so a rotation or disable in between refuses it.
    public var version: Int64?
    /// The service's record of the client from the request's authentication (see the type).
    package var authenticatedRecord = AuthenticatedClientRecord()

    public init(
        clientID: String, gameID: Int64?, appIdentifiers: [String: [String]] = [:],
        environments: Set<StoreEnvironment> = [.production], settings: [String: [String]] = [:], version: Int64? = nil
    ) {
        self.clientID = clientID
        self.gameID = gameID
        self.appIdentifiers = appIdentifiers
        self.environments = environments
        self.settings = settings
        self.version = version
    }

    /// The client's identifiers of one kind (a store's apps).
    public func appIdentifiers(_ kind: AppIdentifierKind) -> [String] { appIdentifiers[kind.name] ?? [] }

    /// A single-valued setting.
    public func setting(_ name: String) -> String? { settings[name]?.first }

    /// Accounts and purchases are shared by every client of one game; a client without a game
    /// is its own scope.
    public var scope: String { Self.scope(clientID: clientID, gameID: gameID) }

    public static func scope(clientID: String, gameID: Int64?) -> String {
        gameID.map { "game:\($0)" } ?? "client:\(clientID)"
    }
}

/// An HTTP contract existing integrations speak, translated to and from the core.
public protocol DialectProvider: Sendable {
    var name: String { get }
    /// Every route, with its declared authentication and rate limits. The core authenticates and
    /// limits before a handler runs.
    func routes(core: any DialectCore) -> [Route]
    /// How this dialect answers a request the core refused (401, 403, 429...), in its envelope.
    func render(_ refusal: RouteRefusal) -> RouteResponse
    /// The refund callback this dialect's game servers expect, if it has one (a capability,
    /// declared; a client picks it by format name).
    var refundCallbacks: (any RefundCallbackRenderer)? { get }
    /// This dialect's routes in the served OpenAPI document, written from the served stores'
    /// facts (the vendor codes, layouts and fields its wire format takes), so a store added later
    /// shows in the dialect's schemas as it is reached by its routes.
    func openAPI(stores: [StoreDeclaration]) -> OpenAPIPart
}

extension DialectProvider {
    public var refundCallbacks: (any RefundCallbackRenderer)? { nil }
    public func openAPI(stores: [StoreDeclaration]) -> OpenAPIPart { OpenAPIPart() }
}

/// A refund or revocation the ledger learned of, for dialects that tell game servers about it.
public struct RefundEvent: Sendable {
    public let transactionID: String
    public let productID: String?
    public let revocationDate: Date?
    public let revocationReasonCode: Int?
    public let gameID: Int64?
    /// The percent of the purchase refunded (50 for half), only when the refund is partial and
    /// the store said how much; nil for a full refund.
    public let partialPercentage: Double?

    package init(
        transactionID: String, productID: String?, revocationDate: Date?, revocationReasonCode: Int?, gameID: Int64?,
        partialPercentage: Double? = nil
    ) {
        self.transactionID = transactionID
        self.productID = productID
        self.revocationDate = revocationDate
        self.revocationReasonCode = revocationReasonCode
        self.gameID = gameID
        self.partialPercentage = partialPercentage
    }
}

/// Renders refund callbacks in one named format (a client's `refund_callback_format`).
public protocol RefundCallbackRenderer: Sendable {
    /// The format name clients choose (`--refund-callback-format`).
    var format: String { get }
    /// Throws when the body cannot be made: nothing stands in for it, so the change that owes the
    /// callback is not committed either, and the store's notification is taken again later.
    func refundCallbackBody(_ event: RefundEvent) throws -> Data
}
