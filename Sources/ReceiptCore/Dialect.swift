public import Foundation

/// The client a dialect request was authenticated as.
public struct ClientInfo: Sendable, Equatable {
    public let clientID: String
    public let gameID: Int64?

    public init(clientID: String, gameID: Int64?) {
        self.clientID = clientID
        self.gameID = gameID
    }
}

/// A transaction as the ledger recorded it, for dialects to render in their own shape.
public struct RecordedTransaction: Sendable, Equatable {
    public var managementID: Int64
    public var store: StoreID
    public var environment: StoreEnvironment
    public var transactionID: String
    public var originalTransactionID: String?
    public var productID: String?
    public var kind: ProductKind?
    public var quantity: Int?
    public var priceMilliunits: Int64?
    public var currency: String?
    public var storefront: String?
    public var purchaseDate: Date?
    public var ownership: Ownership?
    public var state: String
    public var firstVerifiedAt: Date

    public init(managementID: Int64, store: StoreID, environment: StoreEnvironment, transactionID: String, state: String, firstVerifiedAt: Date) {
        self.managementID = managementID
        self.store = store
        self.environment = environment
        self.transactionID = transactionID
        self.state = state
        self.firstVerifiedAt = firstVerifiedAt
    }
}

/// One verification request, whatever API it came through (native or a dialect).
public struct VerificationRequest: Sendable {
    public var store: StoreID
    public var evidence: String
    public var productID: String?
    public var accountToken: String?
    public var playerID: String?
    public var characterID: String?
    public var serverID: String?
    public var requestID: String

    public init(store: StoreID, evidence: String, requestID: String) {
        self.store = store
        self.evidence = evidence
        self.requestID = requestID
    }
}

/// A request as a dialect sees it (no HTTP library types cross into providers).
public struct DialectRequest: Sendable {
    public let method: String
    public let path: String
    /// Header names lower-cased.
    public let headers: [String: String]
    public let body: Data
    public let requestID: String

    public init(method: String, path: String, headers: [String: String], body: Data, requestID: String) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.requestID = requestID
    }
}

public struct DialectResponse: Sendable {
    public let status: Int
    public let body: Data

    public init(status: Int, body: Data) {
        self.status = status
        self.body = body
    }

    public static func json(_ value: some Encodable, status: Int = 200) -> DialectResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return DialectResponse(status: status, body: (try? encoder.encode(value)) ?? Data("{}".utf8))
    }
}

public struct DialectRoute: Sendable {
    public let method: String
    public let path: String
    public let handler: @Sendable (DialectRequest) async -> DialectResponse

    public init(method: String, path: String, handler: @escaping @Sendable (DialectRequest) async -> DialectResponse) {
        self.method = method
        self.path = path
        self.handler = handler
    }
}

/// Why the core refused a dialect's request to authenticate.
public struct AuthenticationRefused: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// The core as dialects see it: authentication with the shared HMAC scheme and verification
/// through the one pipeline and ledger. Dialects hold no SQL and no store logic of their own.
public protocol DialectCore: Sendable {
    /// Checks `X-Client-ID`, `X-Timestamp`, `X-Signature` over `body`. With `rejectReplays`, a
    /// signature already accepted within the time window is refused (across all processes).
    func authenticate(headers: [String: String], body: Data, rejectReplays: Bool) async throws(AuthenticationRefused) -> ClientInfo
    /// Verifies and records; throws `StoreVerificationError`.
    func verify(_ request: VerificationRequest, client: ClientInfo) async throws -> (transaction: RecordedTransaction, duplicate: Bool)
}

/// An HTTP contract existing integrations speak, translated to and from the core.
public protocol DialectProvider: Sendable {
    var name: String { get }
    func routes(core: any DialectCore) -> [DialectRoute]
}

/// A refund or revocation the ledger learned of, for dialects that tell game servers about it.
public struct RefundEvent: Sendable {
    public let transactionID: String
    public let productID: String?
    public let revocationDate: Date?
    public let revocationReasonCode: Int?
    public let gameID: Int64?

    public init(transactionID: String, productID: String?, revocationDate: Date?, revocationReasonCode: Int?, gameID: Int64?) {
        self.transactionID = transactionID
        self.productID = productID
        self.revocationDate = revocationDate
        self.revocationReasonCode = revocationReasonCode
        self.gameID = gameID
    }
}

extension DialectProvider {
    /// The body of the refund callback this dialect's game servers expect, or nil if it has none.
    public func refundCallbackBody(_ event: RefundEvent) -> Data? { nil }
}

/// Renders refund callbacks; the service asks its dialects in order.
public protocol RefundCallbackRendering: Sendable {
    func refundCallbackBody(_ event: RefundEvent) -> Data?
}

/// What a store says about a customer-visible order id (App Store "Look Up Order ID").
public struct StoreOrder: Sendable {
    public struct Entry: Sendable {
        public var transactionID: String?
        public var productID: String?
        /// The store returned signed data that could not be proven and decoded.
        public var decodeFailed: Bool

        public init(transactionID: String?, productID: String?, decodeFailed: Bool) {
            self.transactionID = transactionID
            self.productID = productID
            self.decodeFailed = decodeFailed
        }
    }

    public var found: Bool
    public var environment: StoreEnvironment?
    public var entries: [Entry]

    public init(found: Bool, environment: StoreEnvironment?, entries: [Entry]) {
        self.found = found
        self.environment = environment
        self.entries = entries
    }
}

/// A store provider that can look up order ids.
public protocol OrderLookingUp: Sendable {
    /// Throws `StoreVerificationError` (VERIFIER_ERROR when the store cannot be asked).
    func lookUpOrder(_ orderID: String, appIdentifiers: Set<String>) async throws -> StoreOrder
}

/// What the ledger knows of a transaction, for the client asking.
public struct LedgerPresence: Sendable {
    public var found: Bool
    public var managementID: Int64?
    public var state: String?
    public var recordedForThisGame: Bool

    public init(found: Bool, managementID: Int64?, state: String?, recordedForThisGame: Bool) {
        self.found = found
        self.managementID = managementID
        self.state = state
        self.recordedForThisGame = recordedForThisGame
    }
}

/// Order lookup for dialects: the store's answer and, per transaction id, the ledger's.
public protocol OrderLookupCore: Sendable {
    func lookUpOrder(_ orderID: String, client: ClientInfo) async throws -> (order: StoreOrder, ledger: [String: LedgerPresence])
}
