import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import ReceiptCore
import Testing

@testable import AppStore

/// Apple's external purchase tokens read as StoreKit documents them (base64url JSON), their
/// deadlines, the client's `--external-purchase-report-after`, and the report's body.
@Suite struct AppStoreExternalPurchaseTokens {
    static let created: Int64 = 1_796_000_000_000

    static func token(_ fields: String) -> String { Base64.urlEncode(Data(fields.utf8)) }

    @Test func aTokenIsReadWithItsAppEnvironmentAndDeadline() throws {
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: []))
        let now = Date(timeIntervalSince1970: 1_796_000_100)
        let sandbox = try provider.parseToken(
            Self.token(
                #"{"appAppleId":1,"bundleId":"com.example.game","tokenCreationDate":\#(Self.created),"externalPurchaseId":"SANDBOX_abc","tokenType":"SERVICES"}"#
            ), packageName: nil, now: now)
        #expect(sandbox.environment == .sandbox && sandbox.appIdentifier == "com.example.game")
        #expect(sandbox.reportID == "SANDBOX_abc")
        #expect(sandbox.storeDeadline == Date(timeIntervalSince1970: 1_796_000_000 + 10 * 86_400))
        // A custom link token that expires sooner is due at its expiry.
        let expiring = try provider.parseToken(
            Self.token(
                #"{"bundleId":"com.example.game","tokenCreationDate":\#(Self.created),"tokenExpirationDate":\#(Self.created + 3_600_000),"externalPurchaseId":"e1"}"#
            ), packageName: nil, now: now)
        #expect(expiring.environment == .production)
        #expect(expiring.storeDeadline == Date(timeIntervalSince1970: 1_796_003_600))
        for malformed in [
            "not-base64!", Self.token("[]"), Self.token(#"{"bundleId":"com.example.game"}"#),
            Self.token(#"{"externalPurchaseId":"","bundleId":"b","tokenCreationDate":1}"#),
        ] {
            #expect(throws: ExternalPurchaseTokenRefused.self) {
                try provider.parseToken(malformed, packageName: nil, now: now)
            }
        }
    }

    @Test func theClientsReportAfterIsKeptWithinApplesTenDays() throws {
        #expect(try AppStoreProvider.reportAfterSeconds("72h") == "259200")
        #expect(try AppStoreProvider.reportAfterSeconds("3d") == "259200")
        #expect(try AppStoreProvider.reportAfterSeconds("3600") == "3600")
        for refused in ["11d", "30m", "0h", "-1d", "tomorrow", "99999999999999999999d"] {
            #expect(throws: SettingRejected.self) { try AppStoreProvider.reportAfterSeconds(refused) }
        }
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: []))
        let token = AppStoreProvider.token(
            externalPurchaseID: "e2", bundleID: "com.example.game", createdMs: Self.created, expiresMs: nil)
        let registered = Date(timeIntervalSince1970: 1_796_000_000)
        var client = ClientInfo(clientID: "c", gameID: nil)
        #expect(provider.reportBy(token, client: client, registeredAt: registered) == token.storeDeadline)
        client.settings[AppStoreProvider.Setting.externalPurchaseReportAfter] = ["7200"]
        #expect(provider.reportBy(token, client: client, registeredAt: registered) == registered + 7200)
    }

    @Test func aRefundRefersToItsSaleLineAndANoSaleReportHasNoLines() {
        let at = Date(timeIntervalSince1970: 1_796_000_000)
        func report(
            _ kind: ExternalPurchaseReport.Kind, _ lines: [ExternalPurchaseReport.Line]
        )
            -> AppStoreProvider.ReportBody
        {
            AppStoreProvider.reportBody(
                ExternalPurchaseReport(
                    store: .appStore, environment: .sandbox, clientID: "c", appIdentifier: "com.example.game",
                    tokenRowID: 1, reportID: "SANDBOX_x", token: "t", kind: kind,
                    requestIdentifier: "1cdc286e-7389-417c-b58f-7a7d196e5bbe", lines: lines))
        }
        let sale = report(
            .sale,
            [
                .init(
                    lineID: "rg-9", productID: "gems", quantity: 2, amountMilliunits: 3980, netMilliunits: 3980,
                    currency: "EUR", taxCountry: "de", at: at)
            ])
        #expect(sale.status == "LINE_ITEM" && sale.lineItems?.first?.taxCountry == "DEU")
        #expect(sale.lineItems?.first?.eventType == "BUY" && sale.lineItems?.first?.creationDate == 1_796_000_000_000)
        let refund = report(
            .refund,
            [
                .init(
                    lineID: "rg-9", productID: "gems", quantity: 2, amountMilliunits: 995, netMilliunits: 2985,
                    currency: "EUR", taxCountry: "DE", at: at, refundsLineID: "rg-9", refundID: "rg-9-r25000")
            ])
        #expect(refund.lineItems?.first?.lineItemId == "rg-9-r25000")
        #expect(
            refund.lineItems?.first?.referenceLineItemId == "rg-9" && refund.lineItems?.first?.eventType == "REFUND")
        #expect(report(.noSale, []).status == "NO_LINE_ITEM" && report(.noSale, []).lineItems == nil)
        #expect(report(.unrecognized, []).status == "UNRECOGNIZED_TOKEN")
    }
}
