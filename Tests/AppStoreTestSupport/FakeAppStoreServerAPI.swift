package import AppStore
import Foundation
import HTTPClient
package import HTTPServer
package import OpenSSLCrypto
package import TestSupport

/// A local stand-in for Apple's App Store Server API on loopback, speaking its wire format. It
/// checks every request's JWT the way Apple does (ES256 by the team key, `kid`, `iss`, `aud`,
/// `bid`, an unexpired `exp`) and answers with transactions signed by a test PKI.
package final class FakeAppStoreServerAPI: Sendable {
    package static let keyID = "KEY123ABC", issuerID = "57246542-96fe-1a63-e053-0824d011072a",
        bundleID = "com.example.game"

    package final class State: Sendable {
        package let pki: AppleTestPKI
        let teamPublicKey: PublicKey
        /// Signed transactions by environment ("Production"/"Sandbox") and id.
        package let known = LockedBox<[String: [String: String]]>([:])
        package let hits = LockedBox<[String: Int]>([:])
        /// Statuses to answer first, per route (e.g. ["/inApps/v1/transactions/{id}": [429, 503]]).
        package let failuresFirst = LockedBox<[String: [Int]]>([:])
        /// Every Send Consumption Information body accepted, in order.
        package let consumptionAnswers = LockedBox<[ConsumptionAnswer]>([])
        /// Every Set App Account Token request that reached the route (a valid bearer token),
        /// in order, whatever Apple answered it.
        package let accountTokenRequests = LockedBox<[AccountTokenRequest]>([])
        /// The `Retry-After` a failing 429 carries, in seconds.
        package let retryAfterSeconds = LockedBox(0)
        package let lastNotificationQuery = LockedBox<[String: Any]?>(nil)
        /// Notifications Apple attempted to send, by environment, as Get Notification History
        /// lists them; nil until `addToHistory` (the route then answers a fixed two-page history).
        package let history = LockedBox<[String: [HistoryRecord]]?>(nil)
        /// Every history request's window (startDate, endDate) and token, in order.
        package let historyQueries = LockedBox<[HistoryQuery]>([])
        /// What Get All Subscription Statuses answers, by environment and original transaction id
        /// (the `lastTransactions` entry); a subscription not here is answered from `known`.
        package let statuses = LockedBox<[String: [String: SubscriptionStatusRecord]]>([:])
        /// External purchase reports Apple took, by request identifier, in order (`externalPurchaseReports`).
        package let externalPurchaseReports = LockedBox<[ExternalPurchaseReportReceived]>([])
        /// How many reports to take and then answer 500, as if the answer was lost on the way.
        package let loseExternalPurchaseAnswers = LockedBox(0)
        /// Signed app transactions by environment and any transaction id of their buyer (`addAppTransaction`).
        package let appTransactions = LockedBox<[String: [String: String]]>([:])
        /// Every transaction finished (Finish Transaction), as "<environment> <id>", in order.
        package let finished = LockedBox<[String]>([])

        init(pki: AppleTestPKI, teamPublicKey: PublicKey) {
            self.pki = pki
            self.teamPublicKey = teamPublicKey
        }
    }

    package let state: State
    package let teamKey: PrivateKey
    package let production: HTTPServer
    package let sandbox: HTTPServer

    package init() throws {
        teamKey = try PrivateKey.generateP256()
        state = State(pki: try AppleTestPKI(), teamPublicKey: try teamKey.publicKey)
        production = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0), responder: Self.routes(state, environment: "Production"))
        sandbox = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0), responder: Self.routes(state, environment: "Sandbox"))
        try production.start()
        try sandbox.start()
    }

    package var pki: AppleTestPKI { state.pki }

    /// Sets what Get All Subscription Statuses says of `original`: Apple's status (1 active, 2
    /// expired, 3 billing retry, 4 grace period, 5 revoked) with the signed latest transaction and
    /// renewal info.
    package func setSubscriptionStatus(
        _ original: String, status: Int, signedTransaction: String, signedRenewal: String? = nil,
        environment: String = "Sandbox"
    ) {
        state.statuses.update {
            $0[environment, default: [:]][original] = SubscriptionStatusRecord(
                status: status, originalTransactionId: original, signedTransactionInfo: signedTransaction,
                signedRenewalInfo: signedRenewal)
        }
    }

    /// Get All Subscription Statuses requests answered, by environment.
    package func statusReads(_ environment: String = "Sandbox") -> Int {
        hits(
            environment == "Sandbox"
                ? "Sandbox /inApps/v1/subscriptions/{id}" : "Production /inApps/v1/subscriptions/{id}")
    }

    package func client(retries: Int = 3) -> AppStoreServerAPIClient {
        var http = HTTPClient.Configuration()
        http.retry = .init(maxAttempts: retries, baseDelay: .milliseconds(10), maxDelay: .milliseconds(50))
        // Generous: every suite of the test process shares one small task pool with this fake's
        // handlers; a slow first answer on a loaded machine must not turn into a counted retry.
        http.timeout = .seconds(60)
        var configuration = AppStoreServerAPIClient.Configuration(
            keyID: Self.keyID, issuerID: Self.issuerID, bundleID: Self.bundleID, privateKey: teamKey)
        configuration.productionBaseURL = "http://127.0.0.1:\(production.port)"
        configuration.sandboxBaseURL = "http://127.0.0.1:\(sandbox.port)"
        return AppStoreServerAPIClient(configuration: configuration, http: HTTPClient(http))
    }

    package func add(_ id: String, environment: String, _ overrides: [String: any Sendable] = [:]) throws {
        var fields = overrides
        fields["transactionId"] = id
        fields["environment"] = environment
        let signed = try state.pki.sign(AppleTestPKI.transaction(fields))
        state.known.update { $0[environment, default: [:]][id] = signed }
    }

    package func hits(_ route: String) -> Int { state.hits.get()[route] ?? 0 }

    package struct HistoryRecord: Sendable {
        let signedDate: Int64
        let signedPayload: String
    }

    package struct HistoryQuery: Sendable {
        package let environment: String
        package let startDate: Int64
        package let endDate: Int64
        package let paginationToken: String?
    }

    /// Puts a signed notification into the environment's history, as sent at `signedDate` (ms).
    package func addToHistory(_ signedPayload: String, signedDate: Int64, environment: String) {
        state.history.update { history in
            var all = history ?? [:]
            all[environment, default: []].append(HistoryRecord(signedDate: signedDate, signedPayload: signedPayload))
            history = all
        }
    }

    /// Records on a history page: Apple sends up to 20; two here, so a short history has pages.
    package static let historyPageSize = 2

    package func shutdown() async {
        await production.shutdown()
        await sandbox.shutdown()
    }

    // MARK: - Apple's endpoints

    /// A page of the records signed within [startDate, endDate), oldest first; the token is the
    /// offset of the next page, as opaque to the client as Apple's.
    private static func historyPage(
        _ records: [HistoryRecord], query: [String: Any], token: String?, environment: String,
        state: State
    ) throws -> HTTPResponse {
        guard let start = (query["startDate"] as? NSNumber)?.int64Value,
            let end = (query["endDate"] as? NSNumber)?.int64Value, start < end
        else {
            return HTTPResponse(
                status: 400, headers: ["Content-Type": "application/json"],
                body: Data(#"{"errorCode":4000012,"errorMessage":"Invalid request."}"#.utf8))
        }
        state.historyQueries.update {
            $0.append(HistoryQuery(environment: environment, startDate: start, endDate: end, paginationToken: token))
        }
        let inWindow = records.filter { $0.signedDate >= start && $0.signedDate < end }.sorted {
            $0.signedDate < $1.signedDate
        }
        let offset: Int
        if let token {
            guard token.hasPrefix("page-"), let parsed = Int(token.dropFirst("page-".count)) else {
                return HTTPResponse(
                    status: 400, headers: ["Content-Type": "application/json"],
                    body: Data(#"{"errorCode":4000006,"errorMessage":"Invalid pagination token error."}"#.utf8))
            }
            offset = parsed
        } else {
            offset = 0
        }
        let page = inWindow.dropFirst(offset).prefix(historyPageSize)
        var answer: [String: Any] = [
            "notificationHistory": page.map { ["signedPayload": $0.signedPayload, "sendAttemptResults": []] },
            "hasMore": offset + page.count < inWindow.count,
        ]
        if offset + page.count < inWindow.count { answer["paginationToken"] = "page-\(offset + page.count)" }
        return HTTPResponse(
            status: 200, headers: ["Content-Type": "application/json"],
            body: try JSONSerialization.data(withJSONObject: answer))
    }

    private static func routes(_ state: State, environment: String) -> Responder {
        var router = Router()
        @Sendable func guarded(
            _ route: String, _ body: @escaping @Sendable (HTTPRequest) throws -> HTTPResponse
        ) -> HTTPHandler {
            { request in
                state.hits.update { $0["\(environment) \(route)", default: 0] += 1 }
                if let status = state.failuresFirst.update({ failures -> Int? in
                    guard var queue = failures[route], !queue.isEmpty else { return nil }
                    let first = queue.removeFirst()
                    failures[route] = queue
                    return first
                }) {
                    return HTTPResponse(
                        status: status,
                        headers: status == 429 ? ["Retry-After": String(state.retryAfterSeconds.get())] : [:])
                }
                guard checkToken(request, state: state) else { return HTTPResponse(status: 401) }
                return try body(request)
            }
        }
        @Sendable func transactions(_ ids: [String]) -> [String] {
            ids.compactMap { state.known.get()[environment]?[$0] }
        }

        router.get(
            "/inApps/v1/transactions/{id}",
            guarded("/inApps/v1/transactions/{id}") { request in
                guard let signed = state.known.get()[environment]?[try request.parameter("id")] else {
                    return HTTPResponse(
                        status: 404, headers: ["Content-Type": "application/json"],
                        body: Data(#"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#.utf8))
                }
                return .json(["signedTransactionInfo": signed])
            })
        router.get(
            "/inApps/v2/history/{id}",
            guarded("/inApps/v2/history/{id}") { request in
                // Three pages of one transaction each, chained by revision.
                let ids = state.known.get()[environment]?.keys.sorted() ?? []
                let page = Int(request.query["revision"] ?? "0") ?? 0
                let slice = Array(ids.dropFirst(page).prefix(1))
                let more = page + 1 < ids.count
                return .json(
                    HistoryPage(
                        revision: String(page + 1), hasMore: more, bundleId: bundleID, environment: environment,
                        signedTransactions: transactions(slice)))
            })
        router.get(
            "/inApps/v2/refund/lookup/{id}",
            guarded("/inApps/v2/refund/lookup/{id}") { request in
                let page = Int(request.query["revision"] ?? "0") ?? 0
                let ids = state.known.get()[environment]?.keys.sorted() ?? []
                return .json(
                    HistoryPage(
                        revision: String(page + 1), hasMore: page == 0, bundleId: nil, environment: nil,
                        signedTransactions: transactions(Array(ids.dropFirst(page).prefix(1)))))
            })
        router.get(
            "/inApps/v1/lookup/{orderID}",
            guarded("/inApps/v1/lookup/{orderID}") { request in
                let order = try request.parameter("orderID")
                let ids = order == "MQ5VLT9VXT" ? (state.known.get()[environment]?.keys.sorted() ?? []) : []
                if order == "BROKENDATA" { return .json(OrderLookup(status: 0, signedTransactions: ["not.a.jws"])) }
                return .json(OrderLookup(status: ids.isEmpty ? 1 : 0, signedTransactions: transactions(ids)))
            })
        router.get(
            "/inApps/v1/subscriptions/{id}",
            guarded("/inApps/v1/subscriptions/{id}") { request in
                let id = try request.parameter("id")
                if let record = state.statuses.get()[environment]?[id] {
                    return .json(
                        SubscriptionStatusesBody(
                            environment: environment, bundleId: bundleID, appAppleId: 99,
                            data: [.init(subscriptionGroupIdentifier: "g1", lastTransactions: [record])]))
                }
                guard state.known.get()[environment]?[id] != nil else {
                    return HTTPResponse(
                        status: 404, headers: ["Content-Type": "application/json"],
                        body: Data(#"{"errorCode":4040010,"errorMessage":"Transaction id not found."}"#.utf8))
                }
                let body = """
                    {"environment":"\(environment)","bundleId":"\(bundleID)","appAppleId":99,"data":[{"subscriptionGroupIdentifier":"g1",
                    "lastTransactions":[{"status":1,"originalTransactionId":"\(id)","signedTransactionInfo":"\(transactions([id]).first ?? "")"}]}]}
                    """
                return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
            })
        router.put(
            "/inApps/v2/transactions/consumption/{id}",
            guarded("/inApps/v2/transactions/consumption/{id}") { request in
                // Send Consumption Information (v2), checked as Apple documents its body.
                let id = try request.parameter("id")
                let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
                let preferences: Set<String> = ["DECLINE", "GRANT_FULL", "GRANT_PRORATED"]
                let statuses: Set<String> = [
                    "DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE",
                    "UNDELIVERED_OTHER",
                ]
                let valid =
                    body["customerConsented"] is Bool && body["sampleContentProvided"] is Bool
                    && (body["deliveryStatus"] as? String).map(statuses.contains) == true
                    && (body["consumptionPercentage"].map { ($0 as? Int).map { (0...100_000).contains($0) } == true }
                        ?? true)
                    && (body["refundPreference"].map { ($0 as? String).map(preferences.contains) == true } ?? true)
                guard body["customerConsented"] as? Bool != false else {
                    return HTTPResponse(
                        status: 400, headers: ["Content-Type": "application/json"],
                        body: Data(
                            #"{"errorCode":4000035,"errorMessage":"Invalid request. The customer consented field is invalid or doesn't indicate that the customer consented."}"#
                                .utf8))
                }
                guard valid, state.known.get()[environment]?[id] != nil else {
                    return HTTPResponse(
                        status: 400, headers: ["Content-Type": "application/json"],
                        body: Data(#"{"errorCode":4000000,"errorMessage":"Invalid request."}"#.utf8))
                }
                state.consumptionAnswers.update {
                    $0.append(
                        ConsumptionAnswer(environment: environment, transactionID: id, body: body.mapValues { "\($0)" })
                    )
                }
                return HTTPResponse(status: 202)
            })
        router.put(
            "/inApps/v1/transactions/{id}/appAccountToken",
            guarded("/inApps/v1/transactions/{id}/appAccountToken") { request in
                // Set App Account Token, refused as Apple documents: a token that is not a UUID, an id
                // it does not know, a family-shared purchase, an id that is not an original transaction's.
                let id = try request.parameter("id")
                let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
                let token = body["appAccountToken"] as? String
                state.accountTokenRequests.update {
                    $0.append(
                        AccountTokenRequest(
                            environment: environment, originalTransactionID: id, appAccountToken: token,
                            contentType: request.headers["Content-Type"]))
                }
                guard let token, UUID(uuidString: token) != nil else {
                    return Self.appleError(
                        400, 4_000_183, "Invalid request. The app account token field must be a valid UUID.")
                }
                guard let signed = state.known.get()[environment]?[id], let jws = try? CompactJWS(parsing: signed),
                    let transaction = try? JSONSerialization.jsonObject(with: jws.payload) as? [String: Any]
                else {
                    return Self.appleError(404, 4_040_010, "Transaction id not found.")
                }
                if transaction["inAppOwnershipType"] as? String == "FAMILY_SHARED" {
                    return Self.appleError(
                        400, 4_000_185,
                        "Invalid request. Family Sharing transactions aren't supported by this endpoint.")
                }
                if let original = transaction["originalTransactionId"] as? String, original != id {
                    return Self.appleError(
                        400, 4_000_187,
                        "Invalid request. The transaction ID provided is not an original transaction ID.")
                }
                return HTTPResponse(status: 200)
            })
        router.post(
            "/inApps/v1/notifications/history",
            guarded("/inApps/v1/notifications/history") { request in
                let query = try JSONSerialization.jsonObject(with: request.body) as? [String: Any]
                state.lastNotificationQuery.set(query)
                let token = request.query["paginationToken"]
                if let history = state.history.get() {
                    return try Self.historyPage(
                        history[environment] ?? [], query: query ?? [:], token: token, environment: environment,
                        state: state)
                }
                let body =
                    token == nil
                    ? #"{"notificationHistory":[{"signedPayload":"first"}],"hasMore":true,"paginationToken":"next+page/1"}"#
                    : #"{"notificationHistory":[{"signedPayload":"second:\#(token!)"}],"hasMore":false}"#
                return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(body.utf8))
            })
        externalPurchaseRoutes(&router, state: state, environment: environment, guarded: guarded)
        appTransactionRoutes(&router, state: state, environment: environment, guarded: guarded)
        return router.build(handlerExecutor: FakeServing.executor)
    }

    /// An error as Apple's API answers one: its status and `{"errorCode", "errorMessage"}`.
    static func appleError(_ status: Int, _ code: Int, _ message: String) -> HTTPResponse {
        HTTPResponse(
            status: status, headers: ["Content-Type": "application/json"],
            body: Data(#"{"errorCode":\#(code),"errorMessage":"\#(message)"}"#.utf8))
    }

    /// Apple's checks on the bearer token, done independently of our signing code's assumptions.
    static func checkToken(_ request: HTTPRequest, state: State) -> Bool {
        guard let header = request.headers["Authorization"], header.hasPrefix("Bearer "),
            let jws = try? CompactJWS(parsing: String(header.dropFirst(7))),
            jws.header.alg == "ES256", jws.header.kid == keyID,
            jws.isValidSignature(using: state.teamPublicKey),
            let claims = try? JSONSerialization.jsonObject(with: jws.payload) as? [String: Any],
            claims["iss"] as? String == issuerID, claims["aud"] as? String == "appstoreconnect-v1",
            claims["bid"] as? String == bundleID,
            let exp = claims["exp"] as? Int, let iat = claims["iat"] as? Int,
            exp > Int(Date().timeIntervalSince1970), exp - iat <= 3600
        else { return false }
        return true
    }

    struct HistoryPage: Encodable {
        let revision: String
        let hasMore: Bool
        let bundleId: String?
        let environment: String?
        let signedTransactions: [String]
    }

    struct OrderLookup: Encodable {
        let status: Int
        let signedTransactions: [String]
    }
}

/// One `lastTransactions` entry of Get All Subscription Statuses.
package struct SubscriptionStatusRecord: Codable, Sendable {
    let status: Int
    let originalTransactionId: String
    let signedTransactionInfo: String
    let signedRenewalInfo: String?
}

struct SubscriptionStatusesBody: Encodable {
    struct Group: Encodable {
        let subscriptionGroupIdentifier: String; let lastTransactions: [SubscriptionStatusRecord]
    }
    let environment: String
    let bundleId: String
    let appAppleId: Int
    let data: [Group]
}

/// A Set App Account Token request as the fake received it.
package struct AccountTokenRequest: Sendable, Equatable {
    package let environment: String
    package let originalTransactionID: String
    package let appAccountToken: String?
    package let contentType: String?

    package init(environment: String, originalTransactionID: String, appAccountToken: String?, contentType: String?) {
        self.environment = environment
        self.originalTransactionID = originalTransactionID
        self.appAccountToken = appAccountToken
        self.contentType = contentType
    }
}

/// A consumption answer the fake accepted: its fields as text (`true`, `80000`, `DECLINE`).
package struct ConsumptionAnswer: Sendable {
    package let environment: String
    package let transactionID: String
    package let body: [String: String]
}
