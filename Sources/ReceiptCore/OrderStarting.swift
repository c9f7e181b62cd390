public import Foundation

/// One line of an order a game asks the service to start: a product, how many, and the price of
/// one, in milliunits of the order's currency.
public struct OrderItem: Sendable, Equatable, Codable {
    public var productID: String
    public var quantity: Int
    public var unitPriceMilliunits: Int64
    /// What the buyer is shown for the line.
    public var description: String

    public init(productID: String, quantity: Int, unitPriceMilliunits: Int64, description: String) {
        self.productID = productID
        self.quantity = quantity
        self.unitPriceMilliunits = unitPriceMilliunits
        self.description = description
    }

    enum CodingKeys: String, CodingKey {
        case productID = "product_id", quantity, unitPriceMilliunits = "price_milliunits", description
    }

    /// The line's total (quantity × unit price), or nil when it would overflow.
    public var totalMilliunits: Int64? {
        let (total, overflow) = unitPriceMilliunits.multipliedReportingOverflow(by: Int64(quantity))
        return overflow ? nil : total
    }
}

/// What a game asks for when it starts an order with a store whose purchases the service runs
/// (a store with no receipt: the game's purchase server starts each transaction and finishes it
/// when the player approved). The order id is the service's; the store keeps it.
public struct OrderRequest: Sendable {
    /// Picked by the service: unique, and the evidence the game verifies the order with later.
    public var orderID: String
    /// The game's player the order is for: its purchases are that player's.
    public var playerID: String
    /// The buyer's account at the store, in the store's terms.
    public var storeAccount: String
    public var items: [OrderItem]
    public var currency: String
    public var language: String?
    /// Where the buyer approves: in the game (`client`) or in a browser (`web`).
    public var session: String?
    /// The buyer's address, which a store may require for a browser session.
    public var ipAddress: String?
    /// When this client last saw the buyer's store account proven by a ticket
    /// (`AccountAuthenticating`), if ever: a store may require a recent proof.
    public var accountProvenAt: Date?

    public init(
        orderID: String, playerID: String, storeAccount: String, items: [OrderItem], currency: String,
        language: String? = nil, session: String? = nil, ipAddress: String? = nil
    ) {
        self.orderID = orderID
        self.playerID = playerID
        self.storeAccount = storeAccount
        self.items = items
        self.currency = currency
        self.language = language
        self.session = session
        self.ipAddress = ipAddress
    }
}

/// What the store said when the order was started.
public struct StartedOrder: Sendable, Equatable {
    /// The store's id for the transaction it opened.
    public var storeTransactionID: String?
    /// Where to send the buyer to approve it, for a browser session.
    public var approvalURL: String?

    public init(storeTransactionID: String?, approvalURL: String?) {
        self.storeTransactionID = storeTransactionID
        self.approvalURL = approvalURL
    }
}

/// An order as the service recorded it when it was started, handed to the store's `verify` when
/// the evidence names it (`VerificationContext.order`): who it is for, what it holds, and whether
/// an earlier attempt to finish it may have reached the store.
public struct OrderRecord: Sendable, Equatable {
    public var orderID: String
    public var playerID: String
    public var storeAccount: String
    public var items: [OrderItem]
    public var currency: String
    public var storeTransactionID: String?
    /// How many verifications asked the store to finish it before this one: more than none means
    /// an answer may have been lost, so the store is asked where the order stands first.
    public var earlierAttempts: Int

    public init(
        orderID: String, playerID: String, storeAccount: String, items: [OrderItem], currency: String,
        storeTransactionID: String?, earlierAttempts: Int
    ) {
        self.orderID = orderID
        self.playerID = playerID
        self.storeAccount = storeAccount
        self.items = items
        self.currency = currency
        self.storeTransactionID = storeTransactionID
        self.earlierAttempts = earlierAttempts
    }
}

/// A store whose purchases the service starts (`POST /v1/orders`): nothing is owned until the
/// order is finished by a verification of its order id.
public protocol OrderStarting: Sendable {
    /// Opens the order with the store. `context` is what a verification of this client would be
    /// asked with (apps, environments, credentials, deadline). Throws `StoreVerificationError`:
    /// a refusal the caller can fix is `invalidField`, the store's trouble `verifierError`.
    func startOrder(_ request: OrderRequest, context: VerificationContext) async throws -> StartedOrder
    /// The buyer's currency at the store, for an order that names none; nil when the store cannot
    /// say. Throws `StoreVerificationError`.
    func buyerCurrency(account: String, context: VerificationContext) async throws -> String?
}

extension OrderStarting {
    public func buyerCurrency(account: String, context: VerificationContext) async throws -> String? { nil }
}

extension StoreVerificationError {
    /// The reason a store gives for an order that can never be finished (declined, abandoned,
    /// failed): the service closes the order, and later verifications are refused without asking.
    public static let orderClosedReason = "ORDER_CLOSED"

    /// An order the store will never finish.
    public static func orderClosed(_ message: String) -> StoreVerificationError {
        StoreVerificationError(code: .verificationFailed, reason: orderClosedReason, message: message)
    }
}
