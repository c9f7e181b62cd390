package import Foundation
package import HTTPServer

/// Apple's External Purchase Server API in the fake, on the App Store Server API's hosts and
/// behind the same JWT check: Send External Purchase Report (`PUT /externalPurchase/v1/reports`)
/// validated as Apple documents `ExternalPurchaseReport` and its line items, a repeated request
/// identifier refused as a duplicate (400, DuplicateValueError), and Retrieve External Purchase
/// Report (`GET /externalPurchase/v1/reports/{requestIdentifier}`) for reports it took.
extension FakeAppStoreServerAPI {
    /// One report Apple took.
    package struct ExternalPurchaseReportReceived: Sendable {
        package let environment: String
        package let requestIdentifier: String
        package let externalPurchaseId: String
        package let status: String
        /// The request body as sent.
        package let body: Data

        /// The report's line items, as sent.
        package var lineItems: [[String: Any]] {
            ((try? JSONSerialization.jsonObject(with: body)) as? [String: Any])?["lineItems"] as? [[String: Any]] ?? []
        }
    }

    /// Every report Apple took for a token, in order.
    package func externalPurchaseReports(for externalPurchaseId: String) -> [ExternalPurchaseReportReceived] {
        state.externalPurchaseReports.get().filter { $0.externalPurchaseId == externalPurchaseId }
    }

    static func externalPurchaseRoutes(
        _ router: inout Router, state: State, environment: String,
        guarded: (String, @escaping @Sendable (HTTPRequest) throws -> HTTPResponse) -> HTTPHandler
    ) {
        router.put(
            "/externalPurchase/v1/reports",
            guarded("/externalPurchase/v1/reports") { request in
                guard let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any],
                    let requestIdentifier = body["requestIdentifier"] as? String,
                    UUID(uuidString: requestIdentifier) != nil,
                    let externalPurchaseId = body["externalPurchaseId"] as? String, !externalPurchaseId.isEmpty,
                    let status = body["status"] as? String, reportIsValid(body, status: status)
                else {
                    return appleError(400, 4_000_000, "Invalid request.")
                }
                let items = body["lineItems"] as? [[String: Any]] ?? []
                let referenced =
                    state.externalPurchaseReports.get().filter { $0.externalPurchaseId == externalPurchaseId }
                    .flatMap(\.lineItems) + items
                guard referencesAreValid(items, among: referenced) else {
                    return appleError(400, 4_000_000, "ReferenceInvalidSubscriptionEventError")
                }
                let taken = state.externalPurchaseReports.update { reports -> Bool in
                    guard !reports.contains(where: { $0.requestIdentifier == requestIdentifier }) else { return false }
                    reports.append(
                        ExternalPurchaseReportReceived(
                            environment: environment, requestIdentifier: requestIdentifier,
                            externalPurchaseId: externalPurchaseId, status: status, body: request.body))
                    return true
                }
                guard taken else {
                    return HTTPResponse(
                        status: 400, headers: ["Content-Type": "application/json"],
                        body: Data(
                            #"{"errorMessage":"DuplicateValueError: the requestIdentifier was used before."}"#.utf8))
                }
                let lose = state.loseExternalPurchaseAnswers.update { count -> Bool in
                    guard count > 0 else { return false }
                    count -= 1
                    return true
                }
                if lose { return HTTPResponse(status: 500) }
                return .json(["requestIdentifier": requestIdentifier])
            })
        router.get(
            "/externalPurchase/v1/reports/{requestIdentifier}",
            guarded("/externalPurchase/v1/reports/{requestIdentifier}") { request in
                let id = try request.parameter("requestIdentifier")
                guard let report = state.externalPurchaseReports.get().first(where: { $0.requestIdentifier == id })
                else {
                    return appleError(400, 4_000_000, "NotFoundError")
                }
                return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: report.body)
            })
    }

    /// `LINE_ITEM` carries line items with every field Apple requires, `amountTaxExclusive` being
    /// `amountTaxInclusive` less `taxAmount` as Apple requires; the other statuses carry none.
    static func reportIsValid(_ body: [String: Any], status: String) -> Bool {
        let items = body["lineItems"] as? [[String: Any]]
        switch status {
        case "NO_LINE_ITEM", "UNRECOGNIZED_TOKEN", "DUPLICATE_TOKEN":
            return items == nil
        case "LINE_ITEM":
            guard let items, !items.isEmpty else { return false }
            return items.allSatisfy { item in
                let text = ["lineItemId", "eventType", "pricingCurrency", "reportingCurrency", "taxCountry"]
                let numbers = [
                    "creationDate", "amountTaxExclusive", "amountTaxInclusive", "netAmountTaxExclusive", "taxAmount",
                ]
                return text.allSatisfy { (item[$0] as? String)?.isEmpty == false }
                    && numbers.allSatisfy { item[$0] is Int }
                    && item["amountTaxInclusive"] as? Int
                        == (item["amountTaxExclusive"] as? Int ?? 0) + (item["taxAmount"] as? Int ?? 0)
                    && (item["taxCountry"] as? String)?.count == 3
                    && (item["eventType"] as? String != "REFUND" || item["referenceLineItemId"] is String)
                    && ["ONE_TIME_BUY", "SUBSCRIPTION"].contains(item["productType"] as? String ?? "")
                    && subscriptionFieldsAreValid(item)
            }
        default:
            return false
        }
    }

    /// A line item's `referenceLineItemId` names a line of this report or of one the token's
    /// reports Apple took before: a refund the line it refunds, a subscription's later event its
    /// `SUBSCRIPTION_START` line.
    static func referencesAreValid(_ items: [[String: Any]], among known: [[String: Any]]) -> Bool {
        items.allSatisfy { item in
            let event = item["subscriptionEvent"] as? String
            let needsReference =
                item["eventType"] as? String == "REFUND" || (event != nil && event != "SUBSCRIPTION_START")
            guard needsReference else { return true }
            guard let reference = item["referenceLineItemId"] as? String,
                let target = known.first(where: { $0["lineItemId"] as? String == reference })
            else { return false }
            return event == nil || target["subscriptionEvent"] as? String == "SUBSCRIPTION_START"
        }
    }

    /// A `SubscriptionBuyLineItem` (a subscription's `BUY`) says which event of the subscription it
    /// is and its days of paid service; no other line item carries either.
    static func subscriptionFieldsAreValid(_ item: [String: Any]) -> Bool {
        let buysAPeriod = item["productType"] as? String == "SUBSCRIPTION" && item["eventType"] as? String == "BUY"
        guard buysAPeriod else {
            return item["subscriptionEvent"] == nil && item["subscriptionDaysOfPaidService"] == nil
        }
        let events = ["SUBSCRIPTION_START", "RENEWAL", "SUBSCRIPTION_CHANGE", "SUBSCRIPTION_PAYMENT"]
        return events.contains(item["subscriptionEvent"] as? String ?? "")
            && (item["subscriptionDaysOfPaidService"] as? Int).map { $0 >= 0 } == true
    }
}
