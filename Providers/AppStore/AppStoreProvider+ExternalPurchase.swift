public import Foundation
import JSON
import OpenSSLCrypto
public import ReceiptCore

/// Apple's external purchase tokens and the reports Apple requires of them, as the External
/// Purchase Server API documents them (developer.apple.com/documentation/externalpurchaseserverapi:
/// `ExternalPurchaseReport`, `OneTimeBuyLineItem`, `RefundLineItem`, `status`, "Reporting tokens
/// with transactions", "Reporting unrecognized and transactionless tokens") and StoreKit's
/// "Receiving and decoding external purchase tokens" (the token is base64url JSON; a sandbox
/// token's `externalPurchaseId` starts with `SANDBOX`).
extension AppStoreProvider: ExternalPurchaseReporting {
    /// Apple notifies a token left unreported (`EXTERNAL_PURCHASE_TOKEN` / `UNREPORTED`) ten days
    /// after it was created, or soon after a custom link token expires: its report is due by then.
    static let unreportedAfter: TimeInterval = 10 * 86_400

    public var reportsTokensWithoutSale: Bool { true }

    public func parseToken(_ token: String, packageName: String?, now: Date) throws -> ExternalPurchaseToken {
        guard let fields = Self.tokenFields(token) else {
            throw ExternalPurchaseTokenRefused(
                "not an App Store external purchase token (base64url JSON with externalPurchaseId, bundleId and tokenCreationDate)"
            )
        }
        return fields
    }

    /// The token's own fields; nil when it is not one.
    static func tokenFields(_ token: String) -> ExternalPurchaseToken? {
        guard token.utf8.count <= 4096, let data = Base64.urlDecode(token),
            let object = JSONValue(parsing: data)?.object,
            let id = object["externalPurchaseId"]?.string, !id.isEmpty, id.utf8.count <= 128,
            let bundleID = object["bundleId"]?.string, !bundleID.isEmpty,
            let createdMs = object["tokenCreationDate"]?.truncatedInteger, createdMs > 0
        else { return nil }
        var token = Self.token(
            externalPurchaseID: id, bundleID: bundleID, createdMs: createdMs,
            expiresMs: object["tokenExpirationDate"]?.truncatedInteger)
        // A custom link token of type `ACQUISITION` marks a customer's acquisition, once; Apple's
        // `status` takes `DUPLICATE_TOKEN` for another one (External Purchase Server API 1.2).
        token.oncePerPlayer = object["tokenType"]?.string == "ACQUISITION"
        return token
    }

    static func token(
        externalPurchaseID id: String, bundleID: String, createdMs: Int64, expiresMs: Int64?
    )
        -> ExternalPurchaseToken
    {
        let issued = Date(timeIntervalSince1970: Double(createdMs) / 1000)
        let deadline = expiresMs.map { Date(timeIntervalSince1970: Double($0) / 1000) } ?? issued + unreportedAfter
        return ExternalPurchaseToken(
            store: .appStore, environment: id.hasPrefix("SANDBOX") ? .sandbox : .production, appIdentifier: bundleID,
            reportID: id, issuedAt: issued, storeDeadline: min(deadline, issued + unreportedAfter))
    }

    /// The client's `--external-purchase-report-after`, counted from when the token was registered.
    public func reportBy(_ token: ExternalPurchaseToken, client: ClientInfo, registeredAt: Date) -> Date {
        guard let seconds = client.settings[Self.Setting.externalPurchaseReportAfter]?.first.flatMap(Int.init) else {
            return token.storeDeadline
        }
        return min(token.storeDeadline, registeredAt + TimeInterval(seconds))
    }

    public func send(
        _ report: ExternalPurchaseReport, credentials: [String: String]
    ) async throws
        -> ExternalPurchaseReportAnswer
    {
        guard let configuration,
            let api = configuration.serverAPIClient(bundleID: report.appIdentifier, http: http, now: now)
        else {
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_NOT_CONFIGURED",
                message:
                    "external purchase reports need the App Store Server API key (RECEIPTGATE_APPSTORE_API_KEY_ID, _ISSUER_ID, _KEY_PATH)"
            )
        }
        let body = try JSONEncoder.sortedForStorage.encode(Self.reportBody(report))
        let environment = Self.appStoreEnvironment(report.environment)
        do {
            let taken = try await api.sendExternalPurchaseReport(body, environment: environment)
            return ExternalPurchaseReportAnswer(sent: body, answer: "accepted \(taken ?? report.requestIdentifier)")
        } catch {
            // A report sent again after its answer was lost is refused as a duplicate: if Apple
            // returns the report by its request identifier, Apple has it, and it is done.
            if error.kind == .refused,
                (try? await api.externalPurchaseReportExists(report.requestIdentifier, environment: environment))
                    == true
            {
                return ExternalPurchaseReportAnswer(
                    sent: body, answer: "already held by Apple (\(String(error.message.prefix(200))))")
            }
            throw StoreVerificationError(
                code: .verifierError, reason: "APP_STORE_EXTERNAL_PURCHASE_REPORT_REFUSED", message: error.message,
                isRetryable: error.kind == .unavailable)
        }
    }

    /// `ExternalPurchaseReport`: `LINE_ITEM` with the sale's or the refund's lines,
    /// `NO_LINE_ITEM` for a token no sale was tied to, `UNRECOGNIZED_TOKEN` for one nobody registered,
    /// `DUPLICATE_TOKEN` for a player's second acquisition token with no sale.
    struct ReportBody: Encodable, Equatable {
        let requestIdentifier: String
        let externalPurchaseId: String
        let status: String
        let lineItems: [LineItem]?
    }

    /// `OneTimeBuyLineItem` (eventType `BUY`), `SubscriptionBuyLineItem` (eventType `BUY`,
    /// productType `SUBSCRIPTION`, with `subscriptionEvent` `SUBSCRIPTION_START` for the first
    /// period and `RENEWAL` for each later one, and `subscriptionDaysOfPaidService`: the paid days
    /// before the period; a later period names the first by `referenceLineItemId`, as Apple's
    /// `ReferenceInvalidSubscriptionEventError` requires) and `RefundLineItem` (eventType `REFUND`,
    /// with `referenceLineItemId`).
    /// Amounts are milliunits of the pricing currency, reported in it: what the buyer paid, the
    /// tax within it (`amountTaxExclusive` is `amountTaxInclusive` less `taxAmount`, as Apple
    /// requires), and `netAmountTaxExclusive` what stays charged before tax after every refund.
    /// A web store that did not say the tax is reported with none.
    struct LineItem: Encodable, Equatable {
        let lineItemId: String
        let referenceLineItemId: String?
        let creationDate: Int64
        let eventType: String
        let productType: String
        let productIdentifier: String?
        let quantity: Int64
        let pricingCurrency: String
        let reportingCurrency: String
        let amountTaxExclusive: Int64
        let amountTaxInclusive: Int64
        let netAmountTaxExclusive: Int64
        let taxAmount: Int64
        let taxCountry: String?
        let subscriptionEvent: String?
        let subscriptionDaysOfPaidService: Int?
    }

    /// `SUBSCRIPTION_START` for the first period, `SUBSCRIPTION_CHANGE` for a period of another
    /// product than the one before it (an upgrade or downgrade), else `RENEWAL`.
    static func subscriptionEvent(_ line: ExternalPurchaseReport.Line) -> String {
        guard line.initialLineID != nil else { return "SUBSCRIPTION_START" }
        return line.changesProduct == true ? "SUBSCRIPTION_CHANGE" : "RENEWAL"
    }

    static func reportBody(_ report: ExternalPurchaseReport) -> ReportBody {
        let status: String =
            switch report.kind {
            case .sale, .refund, .renewal: "LINE_ITEM"
            case .noSale: "NO_LINE_ITEM"
            case .unrecognized: "UNRECOGNIZED_TOKEN"
            case .duplicate: "DUPLICATE_TOKEN"
            }
        let lines = report.lines.map { line in
            let buysAPeriod = line.recurring && line.refundsLineID == nil
            let tax = line.taxMilliunits ?? 0
            return LineItem(
                // A refund names the line it refunds; a subscription's later period its first.
                lineItemId: line.refundID ?? line.lineID,
                referenceLineItemId: line.refundsLineID ?? (buysAPeriod ? line.initialLineID : nil),
                creationDate: Int64((line.at.timeIntervalSince1970 * 1000).rounded(.down)),
                eventType: line.refundsLineID == nil ? "BUY" : "REFUND",
                productType: line.recurring ? "SUBSCRIPTION" : "ONE_TIME_BUY",
                productIdentifier: line.productID, quantity: Int64(line.quantity), pricingCurrency: line.currency,
                reportingCurrency: line.currency, amountTaxExclusive: line.amountMilliunits - tax,
                amountTaxInclusive: line.amountMilliunits,
                netAmountTaxExclusive: line.netMilliunits - (line.netTaxMilliunits ?? 0), taxAmount: tax,
                taxCountry: line.taxCountry.flatMap(CountryCodes.alpha3(of:)),
                subscriptionEvent: buysAPeriod ? subscriptionEvent(line) : nil,
                subscriptionDaysOfPaidService: buysAPeriod ? (line.paidDaysBefore ?? 0) : nil)
        }
        return ReportBody(
            requestIdentifier: report.requestIdentifier, externalPurchaseId: report.reportID, status: status,
            lineItems: lines.isEmpty ? nil : lines)
    }
}
