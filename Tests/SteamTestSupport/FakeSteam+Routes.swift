import Foundation
import HTTPServer
import TestSupport

extension FakeSteam {
    static func routes(_ state: State) -> Responder {
        var router = Router()
        for interface in ["ISteamMicroTxn", "ISteamMicroTxnSandbox"] {
            let sandbox = interface.hasSuffix("Sandbox")
            router.post("/\(interface)/InitTxn/v3/") { request in
                call("InitTxn", request, state) { initTxn($0, state, sandbox: sandbox) }
            }
            router.post("/\(interface)/FinalizeTxn/v2/") { request in
                call("FinalizeTxn", request, state) { finalize($0, state) }
            }
            router.get("/\(interface)/QueryTxn/v3/") { request in
                call("QueryTxn", request, state) { query($0, state) }
            }
            router.post("/\(interface)/RefundTxn/v2/") { request in
                call("RefundTxn", request, state) { refund($0, state) }
            }
            router.get("/\(interface)/GetUserInfo/v2/") { request in
                call("GetUserInfo", request, state) { p in
                    guard p["appid"] == FakeSteam.appID, let steamID = p["steamid"] else {
                        return failure(3, "Invalid parameter")
                    }
                    let currency = state.walletCurrencies.get()[steamID] ?? "USD"
                    return ok([
                        "state": "", "country": currency == "EUR" ? "DE" : "US", "currency": currency,
                        "status": "Active",
                    ])
                }
            }
            router.get("/\(interface)/GetReport/v5/") { request in
                call("GetReport", request, state) { report($0, state, sandbox: sandbox) }
            }
        }
        router.get("/ISteamUserAuth/AuthenticateUserTicket/v1/") { request in
            call("AuthenticateUserTicket", request, state) { authenticate($0, state) }
        }
        return router.build(handlerExecutor: FakeServing.executor)
    }

    /// `ISteamUserAuth` answers inside `params` (`result` among them), a refusal as `error` alone.
    static func authenticate(_ p: [String: String], _ state: State) -> HTTPResponse {
        guard p["appid"] == FakeSteam.appID, let ticket = p["ticket"], let known = state.tickets.get()[ticket] else {
            return envelope(["error": ["errorcode": 101, "errordesc": "Invalid ticket"]])
        }
        return envelope([
            "params": [
                "result": "OK", "steamid": known.steamID, "ownersteamid": known.steamID, "vacbanned": known.vacBanned,
                "publisherbanned": known.publisherBanned,
            ] as [String: Any]
        ])
    }

    /// Reads the parameters (the form body of a POST, the query of a GET), checks the key, and
    /// answers what `handle` makes of them.
    static func call(
        _ name: String, _ request: HTTPRequest, _ state: State, _ handle: ([String: String]) -> HTTPResponse
    ) -> HTTPResponse {
        var parameters = request.query
        if request.method == "POST" {
            guard request.headers["Content-Type"]?.hasPrefix("application/x-www-form-urlencoded") == true else {
                return HTTPResponse(status: 400)
            }
            for pair in String(decoding: request.body, as: UTF8.self).split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
                }
                parameters[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
        }
        // Steam answers a missing or wrong key with 403 and an HTML page.
        guard parameters.removeValue(forKey: "key") == FakeSteam.publisherKey else {
            return HTTPResponse.text("<html><body>Forbidden</body></html>", status: 403, contentType: "text/html")
        }
        state.calls.update { $0.append((name, parameters)) }
        return handle(parameters)
    }

    static func initTxn(_ p: [String: String], _ state: State, sandbox: Bool) -> HTTPResponse {
        guard let orderID = p["orderid"], UInt64(orderID) != nil, let steamID = p["steamid"], let appID = p["appid"],
            let count = p["itemcount"].flatMap({ Int($0) }), count >= 1, let currency = p["currency"],
            p["language"] != nil
        else { return failure(3, "Invalid parameter") }
        var items: [Item] = []
        for index in 0..<count {
            guard let itemID = p["itemid[\(index)]"], UInt32(itemID) != nil,
                let quantity = p["qty[\(index)]"].flatMap({ Int16($0) }), quantity > 0,
                let amount = p["amount[\(index)]"].flatMap({ Int64($0) }),
                let description = p["description[\(index)]"], description.count <= 128
            else { return failure(3, "Invalid parameter") }
            items.append(Item(itemID: itemID, quantity: Int(quantity), amount: amount, status: "Init"))
        }
        if p["usersession"] == "web", p["ipaddress"] == nil { return failure(3, "Invalid parameter") }
        let created: Order? = state.orders.update { orders in
            guard orders[orderID] == nil else { return nil }
            let transID = state.nextTransID.update { next -> Int64 in
                next += 1
                return next
            }
            let order = Order(
                orderID: orderID, transID: String(transID), steamID: steamID, appID: appID, currency: currency,
                status: "Init", time: state.clock.get(), items: items, sandbox: sandbox)
            orders[orderID] = order
            return order
        }
        guard let created else { return failure(2, "The operation failed") }
        var params: [String: Any] = ["orderid": orderID, "transid": created.transID]
        if p["usersession"] == "web" {
            params["steamurl"] = "https://store.steampowered.com/checkout/approvetxn/\(created.transID)/"
        }
        return ok(params)
    }

    static func finalize(_ p: [String: String], _ state: State) -> HTTPResponse {
        guard let orderID = p["orderid"], let appID = p["appid"] else { return failure(3, "Invalid parameter") }
        enum Outcome { case missing, notApproved, denied, committed, charged }
        let outcome: Outcome = state.orders.update { orders in
            guard var order = orders[orderID], order.appID == appID else { return .missing }
            switch order.status {
            case "Init": return .notApproved
            case "Failed": return .denied
            case "Approved":
                order.status = "Succeeded"
                for index in order.items.indices { order.items[index].status = "Succeeded" }
                order.time = state.clock.update { clock -> Date in
                    clock = clock.addingTimeInterval(1)
                    return clock
                }
                orders[orderID] = order
                return .charged
            default: return .committed
            }
        }
        switch outcome {
        case .missing: return failure(3, "Invalid parameter")
        case .notApproved: return failure(5, "User has not approved transaction")
        case .denied: return failure(10, "Transaction has been denied by user")
        case .committed: return failure(6, "Transaction has already been committed")
        case .charged:
            state.charges.update { $0 += 1 }
            if state.loseNextFinalizeAnswer.update({ lose -> Bool in
                defer { lose = false }; return lose
            }) {
                return HTTPResponse(status: 502)
            }
            return ok(["orderid": orderID, "transid": state.orders.get()[orderID]?.transID ?? ""])
        }
    }

    /// The whole order refunded, as the report then lists it.
    static func refund(_ p: [String: String], _ state: State) -> HTTPResponse {
        guard let orderID = p["orderid"], let order = state.orders.get()[orderID], order.appID == p["appid"] else {
            return failure(3, "Invalid parameter")
        }
        guard order.status == "Succeeded" || order.status == "PartialRefund" else {
            return failure(2, "The operation failed")
        }
        let time = state.clock.update { clock -> Date in
            clock = clock.addingTimeInterval(1)
            return clock
        }
        state.orders.update { orders in
            orders[orderID]?.status = "Refunded"
            orders[orderID]?.time = time
            for index in order.items.indices { orders[orderID]?.items[index].status = "Refunded" }
        }
        return ok(["orderid": orderID, "transid": order.transID])
    }

    static func query(_ p: [String: String], _ state: State) -> HTTPResponse {
        guard let appID = p["appid"], let order = state.orders.get()[p["orderid"] ?? ""], order.appID == appID else {
            return failure(3, "Invalid parameter")
        }
        return ok(json(order))
    }

    static func report(_ p: [String: String], _ state: State, sandbox: Bool) -> HTTPResponse {
        guard let appID = p["appid"], let from = p["time"].flatMap(date) else { return failure(3, "Invalid parameter") }
        let limit = p["maxresults"].flatMap { Int($0) } ?? 1000
        let listed = state.orders.get().values
            .filter { $0.appID == appID && $0.sandbox == sandbox && $0.time >= from && $0.status != "Init" }
            .sorted { ($0.time, $0.orderID) < ($1.time, $1.orderID) }
            .prefix(limit)
        return ok(["count": listed.count, "orders": listed.map(json)])
    }

    static func json(_ order: Order) -> [String: Any] {
        [
            "orderid": order.orderID, "transid": order.transID, "steamid": order.steamID, "status": order.status,
            "currency": order.currency, "time": text(order.time), "country": "US", "usstate": "WA",
            "timecreated": text(order.time),
            "items": order.items.map {
                [
                    "itemid": Int($0.itemID) ?? 0, "qty": $0.quantity, "amount": $0.amount, "vat": 0,
                    "itemstatus": $0.status,
                ]
                    as [String: Any]
            },
        ]
    }

    static func ok(_ params: [String: Any]) -> HTTPResponse { envelope(["result": "OK", "params": params]) }

    static func failure(_ code: Int, _ description: String) -> HTTPResponse {
        envelope(["result": "Failure", "error": ["errorcode": code, "errordesc": description]])
    }

    static func envelope(_ response: [String: Any]) -> HTTPResponse {
        let body =
            (try? JSONSerialization.data(withJSONObject: ["response": response], options: [.sortedKeys])) ?? Data()
        return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: body)
    }

    static func date(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.date(from: text)
    }

    static func text(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: date)
    }
}
