import Foundation
import JSON
import ReceiptCore

/// `POST /v1/orders`: the game asks the service to start an order with a store whose purchases
/// the service runs (a store declaring `OrderStarting`). The order is recorded as started, never
/// as a purchase: its items are owned once a verification of its `order_id` finishes it.
extension NativeAPI {
    var orderRoute: Route {
        Route("POST", "/v1/orders", authentication: .signedClient(.allow), rateLimits: [Self.perClient]) {
            request, context in
            await startOrder(request, context: context)
        }
    }

    /// `POST /v1/{store}/authenticate`: a player's store account proven by a ticket the store
    /// issued to the game (`{"ticket", "identity"?}`), answered in the store's words.
    var authenticateRoute: Route {
        Route(
            "POST", "/v1/{store}/authenticate", authentication: .signedClient(.allow), rateLimits: [Self.perClient]
        ) { request, context in
            await authenticate(request, context: context)
        }
    }

    /// A ticket's size at most, in hex digits.
    static let maxTicketBytes = 8192

    func authenticate(_ request: RouteRequest, context: RouteContext) async -> RouteResponse {
        guard let client = context.client else { return Self.error(.unauthorized, "client authentication required") }
        let store = StoreID(rawValue: context.pathParameters["store"] ?? "")
        guard core.authenticatesAccounts(store) else {
            return Self.error(.notFound, "no store here authenticates tickets at this path")
        }
        guard let body = JSONValue(parsing: request.body), body.object != nil else {
            return Self.error(.invalidField, "request body must be a JSON object")
        }
        guard let ticket = body["ticket"]?.string, !ticket.isEmpty else {
            return Self.error(.missingFields, "missing field 'ticket'")
        }
        guard ticket.utf8.count <= Self.maxTicketBytes, ticket.utf8.allSatisfy({ $0 < 0x80 && $0 > 0x20 }) else {
            return Self.error(.invalidField, "field 'ticket' must be the ticket's hexadecimal text")
        }
        let identity = body["identity"]?.string
        if let identity, let problem = Identifier.problem(identity, maxBytes: 128) {
            return Self.error(.invalidField, "field 'identity' \(problem)")
        }
        do {
            let proven = try await core.authenticate(ticket: ticket, identity: identity, store: store, client: client)
            return .json(encoded: proven.answer)
        } catch let error as StoreVerificationError {
            return Self.error(error.code, "\(error.reason): \(error.message)")
        } catch {
            context.logger.error("a ticket could not be checked", ["error": "\(error)"])
            if DatabaseOutage.answersRetry(error) {
                return DatabaseOutage.response(Self.error(.verifierError, DatabaseOutage.message))
            }
            return Self.error(.verifierError, "the ticket could not be checked; safe to retry")
        }
    }

    /// Lines per order, and the size of what a line may say.
    static let maxOrderItems = 100
    static let maxItemDescriptionBytes = 512

    func startOrder(_ request: RouteRequest, context: RouteContext) async -> RouteResponse {
        guard let client = context.client else { return Self.error(.unauthorized, "client authentication required") }
        guard let body = JSONValue(parsing: request.body), let fields = body.object else {
            return Self.error(.invalidField, "request body must be a JSON object")
        }
        let store = StoreID(rawValue: fields["store"]?.string ?? "")
        guard !store.rawValue.isEmpty else { return Self.error(.missingFields, "missing field 'store'") }
        guard let declaration = core.declaration(of: store) else {
            return Self.error(.invalidField, "field 'store' names no store served here")
        }
        guard core.startsOrders(store), let accountField = declaration.orderAccountField else {
            return Self.error(
                .invalidField, "\(declaration.displayName) orders are not started here; verify its receipt")
        }
        let order: OrderDraft
        switch Self.orderRequest(fields, accountField: accountField) {
        case .success(let read): order = read
        case .failure(let problem): return Self.error(problem.code, problem.message)
        }
        do {
            let started = try await core.startOrder(order, store: store, client: client)
            return .json(OrderAnswer(orderID: started.orderID, started: started.started))
        } catch let error as StoreVerificationError {
            return Self.error(error.code, "\(error.reason): \(error.message)")
        } catch {
            context.logger.error("an order could not be started", ["error": "\(error)"])
            if DatabaseOutage.answersRetry(error) {
                return DatabaseOutage.response(Self.error(.verifierError, DatabaseOutage.message))
            }
            return Self.error(.verifierError, "the order could not be started; safe to retry")
        }
    }

    struct OrderAnswer: Encodable {
        let orderID: String
        let started: StartedOrder

        enum CodingKeys: String, CodingKey {
            case orderID = "order_id", storeTransactionID = "store_transaction_id", approvalURL = "approval_url"
        }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(orderID, forKey: .orderID)
            try container.encode(started.storeTransactionID, forKey: .storeTransactionID)
            try container.encode(started.approvalURL, forKey: .approvalURL)
        }
    }

    /// The body as an order (its id still empty: the service picks it), every field checked.
    static func orderRequest(
        _ fields: [String: JSONValue], accountField: EvidenceField
    ) -> Result<OrderDraft, JSONBody.Problem> {
        func problem(_ code: ErrorCode, _ message: String) -> Result<OrderDraft, JSONBody.Problem> {
            .failure(JSONBody.Problem(code: code, message: message))
        }
        func text(
            _ name: String, required: Bool, maxBytes: Int = Identifier.maxBytes
        ) -> Result<String?, JSONBody.Problem> {
            guard let value = fields[name], !value.isNull else {
                return required
                    ? .failure(.init(code: .missingFields, message: "missing field '\(name)'")) : .success(nil)
            }
            guard let string = value.string else {
                return .failure(.init(code: .invalidField, message: "field '\(name)' must be a string"))
            }
            if let found = Identifier.problem(string, maxBytes: maxBytes) {
                return .failure(.init(code: .invalidField, message: "field '\(name)' \(found)"))
            }
            return .success(string)
        }
        let player: String?, account: String?, currency: String?, language: String?, session: String?, address: String?
        do throws(JSONBody.Problem) {
            player = try text("player_id", required: true).get()
            account = try text(accountField.name, required: true, maxBytes: accountField.maxLength).get()
            currency = try text("currency", required: false, maxBytes: 3).get()
            language = try text("language", required: false, maxBytes: 16).get()
            session = try text("usersession", required: false, maxBytes: 16).get()
            address = try text("ip_address", required: false, maxBytes: 64).get()
        } catch {
            return .failure(error)
        }
        guard let player, let account else { return problem(.missingFields, "missing field") }
        if let currency, !OrderDraft.isCurrencyCode(currency) {
            return problem(.invalidField, "field 'currency' must be an ISO 4217 code such as USD")
        }
        var draft = OrderDraft(
            request: OrderRequest(
                orderID: "", playerID: player, storeAccount: account, items: [], currency: currency ?? "",
                language: language, session: session, ipAddress: address))
        guard let lines = fields["items"]?.array else {
            return problem(fields["items"] == nil ? .missingFields : .invalidField, "field 'items' must be a list")
        }
        guard (1...maxOrderItems).contains(lines.count) else {
            return problem(.invalidField, "field 'items' must hold 1 to \(maxOrderItems) lines")
        }
        for (index, line) in lines.enumerated() {
            let name = "items[\(index)]"
            guard let product = line["product_id"]?.string, Identifier.problem(product) == nil else {
                return problem(.invalidField, "field '\(name).product_id' must be a product id")
            }
            guard let quantityText = line["quantity"]?.numberText, let quantity = Int(quantityText), quantity >= 1,
                quantity <= 1_000_000
            else { return problem(.invalidField, "field '\(name).quantity' must be a whole number from 1") }
            var price: Int64 = 0
            if let given = line["price_milliunits"], !given.isNull {
                guard let text = given.numberText, let value = Int64(text), value >= 0 else {
                    return problem(
                        .invalidField, "field '\(name).price_milliunits' must be a whole number of milliunits")
                }
                price = value
            } else {
                draft.unpriced.insert(index)
            }
            var description = ""
            if let given = line["description"], !given.isNull {
                guard let text = given.string, !text.isEmpty, text.utf8.count <= maxItemDescriptionBytes else {
                    return problem(
                        .invalidField,
                        "field '\(name).description' must be a text of 1 to \(maxItemDescriptionBytes) bytes")
                }
                description = text
            } else {
                draft.undescribed.insert(index)
            }
            let item = OrderItem(
                productID: product, quantity: quantity, unitPriceMilliunits: price, description: description)
            guard item.totalMilliunits != nil else { return problem(.invalidField, "field '\(name)' totals too much") }
            draft.request.items.append(item)
        }
        return .success(draft)
    }
}
