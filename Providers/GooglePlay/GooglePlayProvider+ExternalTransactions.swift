public import Foundation
import JSON
public import ReceiptCore

/// Google Play's alternative billing and external offers programs: each sale made outside Play
/// billing with an external transaction token is created as an external transaction, and each of
/// its refunds reported, within 24 hours (androidpublisher v3 `externaltransactions`:
/// `ExternalTransaction`, `createexternaltransaction`, `refundexternaltransaction`). The token
/// is opaque: it names no app, so the game says the package.
extension GooglePlayProvider: ExternalPurchaseReporting {
    /// Google wants a transaction reported within a day of it.
    static let externalTransactionWindow: TimeInterval = 86_400

    /// Google takes transactions only: a token with no sale is not reported.
    public var reportsTokensWithoutSale: Bool { false }

    public func parseToken(_ token: String, packageName: String?, now: Date) throws -> ExternalPurchaseToken {
        guard let packageName, !packageName.isEmpty else {
            throw ExternalPurchaseTokenRefused("a Google Play external transaction token needs its package_name")
        }
        guard !token.isEmpty, token.utf8.count <= 4096, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f }) else {
            throw ExternalPurchaseTokenRefused("not a Google Play external transaction token")
        }
        return ExternalPurchaseToken(
            store: store, environment: .production, appIdentifier: packageName, reportID: token, issuedAt: nil,
            storeDeadline: now + Self.externalTransactionWindow)
    }

    /// Google's `Price`: micros of the currency, as a string.
    struct Price: Encodable, Equatable {
        let priceMicros: String
        let currency: String
    }

    /// `ExternalTransaction` as created: a one-time transaction, or a payment of a subscription
    /// (`recurringTransaction` with `externalSubscription.subscriptionType` `RECURRING`; a renewal
    /// with `initialExternalTransactionId`, the first payment's id, and no token).
    struct CreateBody: Encodable, Equatable {
        struct OneTime: Encodable, Equatable { let externalTransactionToken: String }
        /// The first payment carries the token; each later one names the first by its id instead.
        struct Recurring: Encodable, Equatable {
            struct Subscription: Encodable, Equatable { let subscriptionType: String }
            let externalTransactionToken: String?
            let initialExternalTransactionId: String?
            let externalSubscription: Subscription
        }
        struct TaxAddress: Encodable, Equatable { let regionCode: String }
        let originalPreTaxAmount: Price
        let originalTaxAmount: Price
        let transactionTime: String
        let oneTimeTransaction: OneTime?
        let recurringTransaction: Recurring?
        let userTaxAddress: TaxAddress?
    }

    struct RefundBody: Encodable, Equatable {
        struct Partial: Encodable, Equatable {
            let refundId: String
            let refundPreTaxAmount: Price
        }
        struct Full: Encodable, Equatable {}
        let refundTime: String
        let partialRefund: Partial?
        let fullRefund: Full?
    }

    /// A web sale is one external transaction: its lines' amounts together, before tax and the
    /// tax (none when the web store did not say), the ledger id of its first line as the
    /// transaction id (so a retry creates nothing twice).
    public func send(
        _ report: ExternalPurchaseReport, credentials: [String: String]
    ) async throws
        -> ExternalPurchaseReportAnswer
    {
        guard let first = report.lines.first, [.sale, .refund, .renewal].contains(report.kind) else {
            return ExternalPurchaseReportAnswer(sent: Data(), answer: "Google takes no report of this kind")
        }
        let id = first.lineID
        let currency = first.currency
        let tax = report.lines.reduce(Int64(0)) { $0 + ($1.taxMilliunits ?? 0) }
        let preTax = report.lines.reduce(Int64(0)) { $0 + $1.amountMilliunits } - tax
        let netPreTax = report.lines.reduce(Int64(0)) { $0 + $1.netMilliunits - ($1.netTaxMilliunits ?? 0) }
        let preTaxMicros = try Self.micros(preTax), taxMicros = try Self.micros(tax)
        let netMicros = try Self.micros(netPreTax)
        let package = report.appIdentifier
        do {
            let key = try serviceAccountKey(credentials)
            switch report.kind {
            case .sale, .renewal:
                let body = try JSONEncoder.sortedKeys.encode(
                    CreateBody(
                        originalPreTaxAmount: Price(priceMicros: preTaxMicros, currency: currency),
                        originalTaxAmount: Price(priceMicros: taxMicros, currency: currency),
                        transactionTime: Self.rfc3339(first.at),
                        oneTimeTransaction: first.recurring ? nil : .init(externalTransactionToken: report.token),
                        recurringTransaction: first.recurring
                            ? .init(
                                // A renewal names the transaction its sale was created as.
                                externalTransactionToken: first.initialLineID == nil ? report.token : nil,
                                initialExternalTransactionId: first.initialLineID == nil
                                    ? nil : first.saleLineID ?? first.initialLineID,
                                externalSubscription: .init(subscriptionType: "RECURRING")) : nil,
                        userTaxAddress: first.taxCountry.map { .init(regionCode: $0) }))
                do {
                    try await api.createExternalTransaction(package: package, id: id, body: body, key: key)
                    return ExternalPurchaseReportAnswer(sent: body, answer: "created \(id)")
                } catch let error as StoreAPIError where error.kind != .credentialsRefused {
                    // A create repeated after its answer was lost: Google already holds the transaction.
                    guard try await api.externalTransaction(package: package, id: id, key: key) != nil else {
                        throw error
                    }
                    return ExternalPurchaseReportAnswer(sent: body, answer: "already held by Google (\(id))")
                }
            default:
                let full = first.fullRefund
                let body = try JSONEncoder.sortedKeys.encode(
                    RefundBody(
                        refundTime: Self.rfc3339(first.at),
                        partialRefund: full
                            ? nil
                            : .init(
                                refundId: first.refundID ?? "\(id)-r",
                                refundPreTaxAmount: Price(priceMicros: preTaxMicros, currency: currency)),
                        fullRefund: full ? .init() : nil))
                do {
                    try await api.refundExternalTransaction(package: package, id: id, body: body, key: key)
                    return ExternalPurchaseReportAnswer(sent: body, answer: "refunded \(id)")
                } catch let error as StoreAPIError where error.kind != .credentialsRefused {
                    // A refund repeated after its answer was lost: Google's current amount shows it.
                    guard let held = try await api.externalTransaction(package: package, id: id, key: key),
                        let current = Self.currentPreTaxMicros(held), let net = Int64(netMicros), current <= net
                    else { throw error }
                    return ExternalPurchaseReportAnswer(sent: body, answer: "already refunded at Google (\(id))")
                }
            }
        } catch let error as StoreAPIError {
            throw error.verificationError
        }
    }

    /// Milliunits as Google's micros (a string); an amount too large for them is refused, never
    /// sent wrapped.
    static func micros(_ milliunits: Int64) throws -> String {
        let (micros, overflow) = milliunits.multipliedReportingOverflow(by: 1000)
        guard !overflow else {
            throw StoreVerificationError(
                code: .verifierError, reason: "AMOUNT_OUT_OF_RANGE",
                message: "\(milliunits) milliunits do not fit Google's micros", isRetryable: false)
        }
        return String(micros)
    }

    /// `currentPreTaxAmount.priceMicros` of an `ExternalTransaction`.
    static func currentPreTaxMicros(_ body: Data) -> Int64? {
        JSONValue(parsing: body)?["currentPreTaxAmount"]?["priceMicros"]?.string.flatMap { Int64($0) }
    }
}

extension JSONEncoder {
    fileprivate static var sortedKeys: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
