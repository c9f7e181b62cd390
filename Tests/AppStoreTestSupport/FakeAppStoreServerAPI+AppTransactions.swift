package import Foundation
package import HTTPServer

/// Get App Transaction Info (`GET /inApps/v1/transactions/appTransactions/{transactionId}`,
/// answering `{"signedAppTransactionInfo": …}`) and Finish Transaction
/// (`POST /inApps/v1/transactions/{transactionId}/finish`, 200 with no body) in the fake, behind
/// the same JWT check, with Apple's errors: an id Apple never issued is TransactionIdNotFoundError
/// (404, 4040010), a buyer with no app transaction AppTransactionDoesNotExistError (404, 4040019).
extension FakeAppStoreServerAPI {
    /// The buyer of `transactionIDs` (any of theirs: a transaction id, an original one, the app
    /// transaction id) has this app transaction; it is signed by the fake's PKI.
    package func addAppTransaction(
        _ fields: [String: any Sendable], for transactionIDs: [String], environment: String = "Sandbox"
    ) throws {
        var payload: [String: any Sendable] = [
            "receiptType": environment, "bundleId": Self.bundleID, "appAppleId": 1234,
            "receiptCreationDate": Int64(Date().timeIntervalSince1970 * 1000), "originalPlatform": "iOS",
            "applicationVersion": "1", "originalApplicationVersion": "1",
        ]
        for (key, value) in fields { payload[key] = value }
        let signed = try state.pki.sign(payload)
        state.appTransactions.update { known in
            for id in transactionIDs { known[environment, default: [:]][id] = signed }
        }
    }

    /// The transactions finished in `environment`, in order.
    package func finishedTransactions(_ environment: String = "Sandbox") -> [String] {
        state.finished.get().compactMap { entry in
            entry.hasPrefix("\(environment) ") ? String(entry.dropFirst(environment.count + 1)) : nil
        }
    }

    static func appTransactionRoutes(
        _ router: inout Router, state: State, environment: String,
        guarded: (String, @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) -> HTTPHandler
    ) {
        router.get(
            "/inApps/v1/transactions/appTransactions/{id}",
            guarded("/inApps/v1/transactions/appTransactions/{id}") { request in
                let id = try request.parameter("id")
                if let signed = state.appTransactions.get()[environment]?[id] {
                    return .json(["signedAppTransactionInfo": signed])
                }
                if state.known.get()[environment]?[id] != nil {
                    return appleError(404, 4_040_019, "App transaction does not exist.")
                }
                return appleError(404, 4_040_010, "Transaction id not found.")
            })
        router.post(
            "/inApps/v1/transactions/{id}/finish",
            guarded("/inApps/v1/transactions/{id}/finish") { request in
                let id = try request.parameter("id")
                guard state.known.get()[environment]?[id] != nil else {
                    return appleError(404, 4_040_010, "Transaction id not found.")
                }
                state.finished.update { $0.append("\(environment) \(id)") }
                return HTTPResponse(status: 200)
            })
    }
}
