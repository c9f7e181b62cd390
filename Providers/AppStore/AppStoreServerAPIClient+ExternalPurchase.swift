package import Foundation
package import ReceiptCore

/// Apple's External Purchase Server API, on the App Store Server API's hosts and with its JWT
/// (developer.apple.com/documentation/externalpurchaseserverapi): Send External Purchase Report
/// (`PUT /externalPurchase/v1/reports`) and Retrieve External Purchase Report
/// (`GET /externalPurchase/v1/reports/{requestIdentifier}`).
extension AppStoreServerAPIClient {
    /// Sends one report (an `ExternalPurchaseReport` body). Apple answers 200 with
    /// `SendReportSuccessResponse` (`requestIdentifier`); 400 for a malformed or duplicate report.
    package func sendExternalPurchaseReport(
        _ body: Data, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> String? {
        struct Answer: Decodable { let requestIdentifier: String? }
        let answer: Answer = try await send("PUT", "/externalPurchase/v1/reports", environment: environment, body: body)
        return answer.requestIdentifier
    }

    /// Whether Apple holds the report sent with `requestIdentifier` (it returns only reports it
    /// took): a report re-sent after a lost answer is refused as a duplicate, and this tells the
    /// duplicate of our own report from a report Apple never took.
    package func externalPurchaseReportExists(
        _ requestIdentifier: String, environment: AppStoreEnvironment
    ) async throws(StoreAPIError) -> Bool {
        struct Answer: Decodable {}
        do {
            let _: Answer = try await send(
                "GET", "/externalPurchase/v1/reports/\(try Self.pathSegment(requestIdentifier))",
                environment: environment)
            return true
        } catch  where error.kind == .refused || error.kind == .notFound {
            return false
        }
    }
}
