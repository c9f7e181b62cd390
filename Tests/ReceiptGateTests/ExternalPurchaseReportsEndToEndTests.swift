import AppStore
import AppStoreTestSupport
import Foundation
import GooglePlay
import GooglePlayTestSupport
import OpenSSLCrypto
import Postgres
import ReceiptCore
import ReceiptGate
import Stripe
import StripeTestSupport
import TestSupport
import Testing

/// Reports of web sales made through an App Store link-out, end to end: the service over HTTP
/// with a real Postgres, Stripe's fake for the web sale, and a fake of Apple's External Purchase
/// Server API that checks the JWT and the report as Apple documents them.
@Suite struct ExternalPurchaseReportsEndToEnd {
    @Test func aTokenTiedToAStripeSaleIsReportedOnceWithItsLines() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        let sale = shop.stripe.sale(
            player: "player-7", lines: [.init("prod_gems", unitAmount: 199, quantity: 2)],
            metadata: ["external_purchase_token": token.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        // Found again by a later pass: still one report.
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        try #require(reports.count == 1, "\(reports.map(\.status))")
        #expect(reports[0].status == "LINE_ITEM")
        let items = reports[0].lineItems
        #expect(items.count == 1)
        #expect(items.first?["eventType"] as? String == "BUY")
        #expect(items.first?["amountTaxExclusive"] as? Int == 3980, "2 × 1.99 USD in milliunits")
        #expect(items.first?["pricingCurrency"] as? String == "USD")
        #expect(items.first?["taxCountry"] as? String == "IRL", "the buyer's address on the session, in alpha-3")
        #expect(items.first?["productIdentifier"] as? String == "prod_gems")
        #expect(try await shop.state(of: token.id) == "reported")
    }

    @Test func aTokenRegisteredWithItsOrderIsReportedWhenTheSaleArrives() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        let sale = shop.stripe.sale(player: "player-8", lines: [.init("prod_vip", unitAmount: 999)])
        let registered = try await shop.register(token.raw, webStore: "stripe", orderID: sale.paymentIntent)
        #expect(registered.status == 200, "\(registered.text)")
        #expect(try await shop.state(of: token.id) == "waiting")
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        #expect(reports.map(\.status) == ["LINE_ITEM"])
        #expect(reports.first?.lineItems.first?["amountTaxExclusive"] as? Int == 9990)
    }

    @Test func aTokenWithNoSaleIsReportedAsSuchAfterItsDeadline() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        #expect(try await shop.register(token.raw).status == 200)
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: token.id).isEmpty, "nothing is owed before the deadline")
        let console = ConsoleBrowserSession(port: shop.harness.client.port)
        _ = try await console.signIn(token: ReportingShop.adminToken)
        let waiting = try await console.get("/console/external-purchases")
        #expect(waiting.status == 200)
        #expect(
            waiting.text.contains("waiting for a sale")
                && (waiting.text.contains(">9 d 23 h<") || waiting.text.contains(">10 d 0 h<")),
            "ten days left: \(waiting.text)")
        // Ten days later (Apple's limit; the client set none shorter).
        shop.clock.set(shop.clock.get().addingTimeInterval(10 * 86_400 + 60))
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: token.id).map(\.status) == ["NO_LINE_ITEM"])
        #expect(try await shop.state(of: token.id) == "reported_no_sale")
        #expect(try await console.get("/console/external-purchases").text.contains("reported as no sale"))
    }

    @Test func aSaleThatCameAfterItsTokenWasReportedWithoutOneIsReportedThen() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        #expect(try await shop.register(token.raw).status == 200)
        shop.passTheReportDeadline()
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: token.id).map(\.status) == ["NO_LINE_ITEM"])
        // The web shop's sale carrying the token reaches the ledger only now.
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 300)], metadata: ["external_purchase_token": token.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        #expect(reports.map(\.status) == ["NO_LINE_ITEM", "LINE_ITEM"], "the token's transactions, once")
        #expect(reports.last?.lineItems.first?["amountTaxInclusive"] as? Int == 3000)
        #expect(try await shop.state(of: token.id) == "reported")
    }

    @Test func aGameNamingTheOrderOfATokenReportedWithoutASaleHasTheSaleReported() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        #expect(try await shop.register(token.raw).status == 200)
        shop.passTheReportDeadline()
        // The web sale was made without the token in its checkout; the game names its order later.
        let sale = shop.stripe.sale(player: "p", lines: [.init("prod_gems", unitAmount: 300)])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: token.id).map(\.status) == ["NO_LINE_ITEM"])
        let named = try await shop.register(token.raw, webStore: "stripe", orderID: sale.paymentIntent)
        #expect(named.status == 200, "\(named.text)")
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: token.id).map(\.status) == ["NO_LINE_ITEM", "LINE_ITEM"])
        #expect(try await shop.state(of: token.id) == "reported")
    }

    @Test func aSaleMoreThanAWeekAfterItsTokensNoSaleReportIsNoLongerLookedFor() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let stale = ReportingShop.appleToken()
        #expect(try await shop.register(stale.raw).status == 200)
        shop.passTheReportDeadline()
        try await shop.sweepAndSend()
        #expect(try await shop.state(of: stale.id) == "reported_no_sale")
        shop.clock.set(shop.clock.get().addingTimeInterval(8 * 86_400))
        shop.stripe.clock.set(shop.clock.get())
        let late = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 300)], metadata: ["external_purchase_token": stale.raw])
        try await shop.paid(late.session)
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: stale.id).map(\.status) == ["NO_LINE_ITEM"])
    }

    @Test func aRenewalRefundedBeforeAnySweepIsReportedThenRefundedInThatOrder() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        let subscribed = shop.stripe.subscribe(
            player: "player-7", product: "prod_pass", unitAmount: 500, metadata: ["external_purchase_token": token.raw])
        try await shop.paid(subscribed.session)
        // The renewal and its refund both reach the ledger before the sweep looks.
        let renewal = shop.stripe.nextPeriod(of: subscribed.subscription, paid: true)
        #expect(try await shop.push(try shop.stripe.webhook("invoice.paid", about: renewal)) == 200)
        let charge = try #require(shop.stripe.charge(paying: renewal))
        try await shop.refund(charge)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        let rows = try await shop.tokenRows()
        try #require(reports.count == 3, "\(rows)")
        let events = reports.compactMap { $0.lineItems.first }.map {
            ($0["subscriptionEvent"] as? String) ?? ($0["eventType"] as? String ?? "")
        }
        #expect(events == ["SUBSCRIPTION_START", "RENEWAL", "REFUND"], "each once, the refund after what it refunds")
        #expect(
            reports[2].lineItems.first?["referenceLineItemId"] as? String == reports[1].lineItems.first?["lineItemId"]
                as? String)
    }

    @Test func aPlayersSecondAcquisitionTokenWithNoSaleIsReportedAsADuplicate() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let first = ReportingShop.appleToken(), second = ReportingShop.appleToken()
        let services = ReportingShop.appleToken(type: "SERVICES")
        for token in [first, second, services] {
            #expect(try await shop.register(token.raw).status == 200)
        }
        shop.clock.set(shop.clock.get().addingTimeInterval(10 * 86_400 + 60))
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: first.id).map(\.status) == ["NO_LINE_ITEM"])
        #expect(shop.apple.externalPurchaseReports(for: second.id).map(\.status) == ["DUPLICATE_TOKEN"])
        #expect(
            shop.apple.externalPurchaseReports(for: services.id).map(\.status) == ["NO_LINE_ITEM"],
            "a services token is not issued once per customer")
        #expect(try await shop.state(of: second.id) == "reported_duplicate")
    }

    @Test func aPartialAndThenAFullRefundAreReportedAgainstTheSaleLine() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 400, quantity: 1)],
            metadata: ["external_purchase_token": token.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        try await shop.refund(sale.charge, amount: 100)
        try await shop.sweepAndSend()
        try await shop.refund(sale.charge)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        try #require(reports.count == 3, "\(reports.map(\.status))")
        let saleLine = try #require(reports[0].lineItems.first?["lineItemId"] as? String)
        let partial = try #require(reports[1].lineItems.first)
        let full = try #require(reports[2].lineItems.first)
        #expect(partial["eventType"] as? String == "REFUND" && partial["referenceLineItemId"] as? String == saleLine)
        #expect(partial["amountTaxExclusive"] as? Int == 1000, "a quarter of 4.00 USD")
        #expect(partial["netAmountTaxExclusive"] as? Int == 3000)
        #expect(full["referenceLineItemId"] as? String == saleLine && full["amountTaxExclusive"] as? Int == 3000)
        #expect(full["netAmountTaxExclusive"] as? Int == 0)
        #expect(Set(reports.map(\.requestIdentifier)).count == 3, "each report has its own request identifier")
    }

    @Test func refundsInStepsAddUpToTheSale() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        // 9.99 USD with 2.00 of tax; 3.00 refunded, then the rest: shares that do not divide evenly.
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 799, tax: 200)],
            metadata: ["external_purchase_token": token.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        try await shop.refund(sale.charge, amount: 300)
        try await shop.sweepAndSend()
        try await shop.refund(sale.charge)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        try #require(reports.count == 3, "\(reports.map(\.status))")
        let refunds = reports.dropFirst().compactMap(\.lineItems.first)
        func sum(_ field: String) -> Int { refunds.reduce(0) { $0 + ($1[field] as? Int ?? 0) } }
        #expect(sum("amountTaxInclusive") == 9990, "every milliunit paid, refunded once")
        #expect(sum("taxAmount") == 2000 && sum("amountTaxExclusive") == 7990)
        #expect(refunds.last?["netAmountTaxExclusive"] as? Int == 0)
    }

    @Test func aRetryAfterALostAnswerIsNotReportedTwice() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        // Apple takes the report and the answer is lost, twice: the client's own retry and the
        // outbox's next attempt both send the same request identifier again.
        shop.apple.state.loseExternalPurchaseAnswers.set(2)
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 199)], metadata: ["external_purchase_token": token.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        #expect(shop.apple.externalPurchaseReports(for: token.id).count == 1)
        #expect(try await shop.state(of: token.id) == "reported")
        let answer =
            try await shop.harness.pool.query(
                "SELECT last_answer FROM external_purchase_tokens WHERE report_id = \(token.id)"
            ).first?.decode("last_answer", as: String?.self) ?? nil
        #expect(answer?.hasPrefix("already held by Apple") == true, "\(String(describing: answer))")
    }

    @Test func anUnreportedNotificationRaisesTheReportAtOnce() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let known = ReportingShop.appleToken()
        #expect(try await shop.register(known.raw).status == 200)
        // No sweep runs: the notification alone makes the report due.
        #expect(try await shop.pushUnreported(known.id) == 200)
        let stranger = ReportingShop.appleToken()
        #expect(try await shop.pushUnreported(stranger.id) == 200)
        try await OutboxDrain.wait(shop.harness.pool)
        let rows = try await shop.tokenRows()
        #expect(shop.apple.externalPurchaseReports(for: known.id).map(\.status) == ["NO_LINE_ITEM"], "\(rows)")
        #expect(shop.apple.externalPurchaseReports(for: stranger.id).map(\.status) == ["UNRECOGNIZED_TOKEN"])
        // The operators' alert: Apple's notices of late reports, counted across the cluster.
        let metrics = try await RawHTTP.request(port: shop.harness.client.port, path: "/metrics").text
        #expect(
            metrics.split(separator: "\n").contains(
                #"receiptgate_external_purchase_unreported_notices_total{store="app_store"} 2"#), "\(metrics)")
    }

    @Test func aSubscriptionSoldThroughATokenIsReportedWithEachRenewalAndItsRefund() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        // 5.00 USD a month and a 20 % tax rate on each invoice.
        let subscribed = shop.stripe.subscribe(
            player: "player-7", product: "prod_pass", unitAmount: 500, metadata: ["external_purchase_token": token.raw],
            taxPercent: 20)
        try await shop.paid(subscribed.session)
        try await shop.sweepAndSend()
        var reports = shop.apple.externalPurchaseReports(for: token.id)
        let rows = try await shop.tokenRows()
        try #require(reports.count == 1, "\(rows)")
        let start = try #require(reports[0].lineItems.first)
        #expect(start["productType"] as? String == "SUBSCRIPTION")
        #expect(start["subscriptionEvent"] as? String == "SUBSCRIPTION_START")
        #expect(start["subscriptionDaysOfPaidService"] as? Int == 0)
        #expect(start["amountTaxExclusive"] as? Int == 5000)
        #expect(start["taxAmount"] as? Int == 1000 && start["amountTaxInclusive"] as? Int == 6000, "the invoice's tax")

        // A month later the subscription renews on the web store: reported under the same token.
        let renewal = shop.stripe.nextPeriod(of: subscribed.subscription, paid: true)
        #expect(try await shop.push(try shop.stripe.webhook("invoice.paid", about: renewal)) == 200)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        reports = shop.apple.externalPurchaseReports(for: token.id)
        let afterRenewal = try await shop.tokenRows()
        try #require(reports.count == 2, "\(afterRenewal)")
        #expect(reports[1].status == "LINE_ITEM")
        let renewed = try #require(reports[1].lineItems.first)
        #expect(renewed["subscriptionEvent"] as? String == "RENEWAL")
        #expect(renewed["subscriptionDaysOfPaidService"] as? Int == 30, "the first period's 30 paid days")
        #expect(renewed["lineItemId"] as? String != start["lineItemId"] as? String)
        #expect(renewed["taxAmount"] as? Int == 1000, "the renewal invoice's own tax")
        #expect(renewed["referenceLineItemId"] as? String == start["lineItemId"] as? String, "the first period's line")
        #expect(Set(reports.map(\.requestIdentifier)).count == 2)

        // The renewal's payment is refunded: a refund of that period's line, not of the first.
        let charge = try #require(shop.stripe.charge(paying: renewal))
        try await shop.refund(charge)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        reports = shop.apple.externalPurchaseReports(for: token.id)
        let afterRefund = try await shop.tokenRows()
        try #require(reports.count == 3, "\(afterRefund)")
        let refund = try #require(reports[2].lineItems.first)
        #expect(refund["eventType"] as? String == "REFUND")
        #expect(refund["referenceLineItemId"] as? String == renewed["lineItemId"] as? String)
        #expect(refund["amountTaxExclusive"] as? Int == 5000)
        #expect(refund["taxAmount"] as? Int == 1000 && refund["netAmountTaxExclusive"] as? Int == 0)
    }

    @Test func aChangeOfPlanOnTheWebStoreIsReportedAsASubscriptionChange() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        let subscribed = shop.stripe.subscribe(
            player: "player-9", product: "prod_pass", unitAmount: 500, metadata: ["external_purchase_token": token.raw])
        try await shop.paid(subscribed.session)
        try await shop.sweepAndSend()
        // The buyer moves up to the yearly pass at its renewal, then renews it as it is; each
        // invoice is paid when its period starts.
        func wait(days: Double) {
            shop.stripe.clock.set(shop.stripe.now.addingTimeInterval(days * 86_400))
            shop.clock.set(shop.clock.get().addingTimeInterval(days * 86_400))
        }
        wait(days: 30)
        let upgraded = shop.stripe.nextPeriod(
            of: subscribed.subscription, paid: true, period: 365 * 86_400, product: "prod_pass_yearly",
            unitAmount: 5000)
        #expect(try await shop.push(try shop.stripe.webhook("invoice.paid", about: upgraded)) == 200)
        try await shop.sweepAndSend()
        wait(days: 365)
        let renewed = shop.stripe.nextPeriod(of: subscribed.subscription, paid: true, period: 365 * 86_400)
        #expect(try await shop.push(try shop.stripe.webhook("invoice.paid", about: renewed)) == 200)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        let rows = try await shop.tokenRows()
        try #require(reports.count == 3, "\(rows)")
        let lines = reports.compactMap(\.lineItems.first)
        #expect(
            lines.map { $0["subscriptionEvent"] as? String } == [
                "SUBSCRIPTION_START", "SUBSCRIPTION_CHANGE", "RENEWAL",
            ])
        #expect(lines[1]["productIdentifier"] as? String == "prod_pass_yearly")
        #expect(lines[1]["amountTaxInclusive"] as? Int == 50_000)
        #expect(lines[2]["subscriptionDaysOfPaidService"] as? Int == 395, "30 days, then a year")
        #expect(
            lines.dropFirst().allSatisfy { $0["referenceLineItemId"] as? String == lines[0]["lineItemId"] as? String })
    }

    @Test func aTaxedSaleIsReportedWithItsTaxAndARefundTakesItsShareOfIt() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let token = ReportingShop.appleToken()
        // 10.00 EUR with 23 % Irish VAT on top, as Stripe Tax adds it: the buyer paid 12.30.
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 1000, tax: 230)], currency: "eur",
            metadata: ["external_purchase_token": token.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        try await shop.refund(sale.charge, amount: 615)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        let reports = shop.apple.externalPurchaseReports(for: token.id)
        try #require(reports.count == 2, "\(reports.map(\.status))")
        let sold = try #require(reports[0].lineItems.first)
        #expect(sold["pricingCurrency"] as? String == "EUR")
        #expect(sold["amountTaxInclusive"] as? Int == 12300, "what the buyer paid")
        #expect(sold["taxAmount"] as? Int == 2300)
        #expect(sold["amountTaxExclusive"] as? Int == 10000 && sold["netAmountTaxExclusive"] as? Int == 10000)
        let refunded = try #require(reports[1].lineItems.first)
        #expect(refunded["eventType"] as? String == "REFUND")
        #expect(refunded["amountTaxInclusive"] as? Int == 6150, "half of what was paid")
        #expect(refunded["taxAmount"] as? Int == 1150, "and half of its tax")
        #expect(refunded["amountTaxExclusive"] as? Int == 5000 && refunded["netAmountTaxExclusive"] as? Int == 5000)
    }

    @Test func aTokenForAnotherAppOrEnvironmentOrMalformedIsRefusedAndNeverReported() async throws {
        let shop = try await ReportingShop.start()
        defer { shop.stop() }
        let otherApp = ReportingShop.appleToken(bundleID: "com.other.game")
        let otherAnswer = try await shop.register(otherApp.raw)
        #expect(otherAnswer.status == 422, "\(otherAnswer.text)")
        #expect(otherAnswer.text.contains("BUNDLE_MISMATCH"))
        let production = ReportingShop.appleToken(sandbox: false)
        #expect(try await shop.register(production.raw).status == 412, "a production token for a sandbox-only client")
        #expect(try await shop.register("not-a-token").status == 400)
        #expect(try await shop.register(String(repeating: "a", count: 5000)).status == 400)
        // A web sale carrying another app's token: kept as refused, never reported.
        let carried = ReportingShop.appleToken(bundleID: "com.other.game")
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 199)],
            metadata: ["external_purchase_token": carried.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        shop.clock.set(shop.clock.get().addingTimeInterval(11 * 86_400))
        try await shop.sweepAndSend()
        #expect(shop.apple.state.externalPurchaseReports.get().isEmpty)
        let states = try await shop.harness.pool.query("SELECT state FROM external_purchase_tokens").map {
            try $0.decode("state", as: String.self)
        }
        #expect(states == ["refused"], "only the carried token is kept, as refused")
    }
}

/// The service with Stripe and the App Store (its Server API key pointed at the fake), one
/// sandbox-only client for com.example.game with a Stripe account, and a clock the test moves.
struct ReportingShop {
    let harness: VerifyHarness
    let stripe: FakeStripe
    let apple: FakeAppStoreServerAPI
    let clock: LockedBox<Date>
    static let adminToken = "reports-admin-" + String(repeating: "e", count: 32)

    /// With `google`, Google Play too (its service-account key the client's own), and the client
    /// accepts production as well (Google's tokens are production's).
    static func start(google: FakeGooglePlay? = nil) async throws -> ReportingShop {
        let stripe = try FakeStripe(), apple = try FakeAppStoreServerAPI()
        let clock = LockedBox(Date())
        let provider = StripeProvider(configuration: try stripe.configuration(reconcileSeconds: 0), now: { stripe.now })
        var stores = [provider.registration]
        if let google {
            var configuration = try google.configuration()
            configuration.serviceAccountKey = nil
            stores.append(
                GooglePlayProvider(
                    configuration: configuration, http: FakeGooglePlay.http(), logger: Logger(minimumLevel: .error)
                ).registration)
        }
        let harness = try await VerifyHarness.start(
            environments: google == nil ? [.sandbox] : [.sandbox, .production], outbox: VerifyHarness.fastOutbox(),
            adminToken: adminToken, otherStores: stores,
            pki: apple.pki,
            appStore: { pki in
                var appStore = AppStoreConfiguration(trustRoots: [pki.root])
                appStore.serverAPIKey = .init(
                    keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID,
                    privateKey: apple.teamKey)
                appStore.serverAPIProductionURL = "http://127.0.0.1:\(apple.production.port)"
                appStore.serverAPISandboxURL = "http://127.0.0.1:\(apple.sandbox.port)"
                appStore.reconcileInterval = nil
                return appStore
            },
            configure: {
                // The test runs each pass itself, and the client's settings changed below count at once.
                $0.externalPurchaseSweepInterval = .seconds(3600)
                $0.clientCacheSeconds = 0
            }, now: { clock.get() })
        var settings = ClientSettings()
        settings.appIdentifiers = [
            StripeProvider.accountKind.name: [FakeStripe.account],
            AppStoreProvider.bundleIDKind.name: ["com.example.game"],
        ]
        settings.sealedSettings = [
            StripeProvider.Setting.apiKey: FakeStripe.apiKey,
            StripeProvider.Setting.webhookSecret: FakeStripe.webhookSecret,
        ]
        if let google {
            settings.appIdentifiers[GooglePlayProvider.packageNameKind.name] = ["com.example.game"]
            settings.sealedSettings[GooglePlayProvider.Setting.serviceAccountKey] = try google.serviceAccountJSON()
        }
        _ = try await harness.service.clients.update(harness.client.clientID, settings)
        return ReportingShop(harness: harness, stripe: stripe, apple: apple, clock: clock)
    }

    func stop() {
        harness.stop()
        let (stripe, apple) = (stripe, apple)
        Task.detached {
            await stripe.server.shutdown()
            await apple.shutdown()
        }
    }

    /// An App Store external purchase token as StoreKit hands it: base64url JSON.
    static func appleToken(
        bundleID: String = "com.example.game", sandbox: Bool = true, type: String = "ACQUISITION"
    ) -> (raw: String, id: String) {
        let id = (sandbox ? "SANDBOX_" : "") + UUID().uuidString.lowercased()
        let json =
            #"{"appAppleId":1234567890,"bundleId":"\#(bundleID)","tokenCreationDate":\#(Int64(Date().timeIntervalSince1970 * 1000)),"externalPurchaseId":"\#(id)","tokenType":"\#(type)"}"#
        return (Base64.urlEncode(Data(json.utf8)), id)
    }

    func register(_ token: String, webStore: String? = nil, orderID: String? = nil) async throws -> RawHTTP.Response {
        var body: [String: Any] = ["store": "app_store", "token": token, "player_id": "player-7"]
        if let webStore { body["web_store"] = webStore }
        if let orderID { body["order_id"] = orderID }
        // Signed at the service's time, as the game's server clock would be.
        return try await harness.client.post(
            "/v1/external-purchase-tokens", json: body, timestamp: Int(clock.get().timeIntervalSince1970), version: "2")
    }

    /// Stripe's webhook that `session` was paid, taken by the service.
    func paid(_ session: String) async throws {
        #expect(try await push(try stripe.webhook("checkout.session.completed", about: session)) == 200)
    }

    /// Refunds `amount` of `charge` (all that is left when nil) and tells the service, as Stripe would.
    func refund(_ charge: String, amount: Int? = nil) async throws {
        stripe.refund(charge: charge, amount: amount)
        #expect(try await push(try stripe.webhook("charge.refunded", about: charge)) == 200)
    }

    func push(_ webhook: FakeStripe.Webhook) async throws -> Int {
        try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/notifications/stripe/\(harness.client.clientID)",
            headers: ["Content-Type": "application/json", "Stripe-Signature": webhook.signature], body: webhook.body
        ).status
    }

    /// Apple's `EXTERNAL_PURCHASE_TOKEN` / `UNREPORTED` for a token, signed as Apple signs it.
    func pushUnreported(_ externalPurchaseID: String) async throws -> Int {
        let signed = try apple.pki.sign([
            "notificationType": "EXTERNAL_PURCHASE_TOKEN", "subtype": "UNREPORTED",
            "notificationUUID": UUID().uuidString.lowercased(), "version": "2.0",
            "signedDate": Int64(Date().timeIntervalSince1970 * 1000),
            "externalPurchaseToken": [
                "externalPurchaseId": externalPurchaseID,
                "tokenCreationDate": Int64(Date().timeIntervalSince1970 * 1000),
                "appAppleId": 1_234_567_890, "bundleId": "com.example.game",
            ] as [String: any Sendable],
        ])
        return try await RawHTTP.request(
            port: harness.client.port, method: "POST", path: "/v1/notifications/app-store",
            body: Data(#"{"signedPayload":"\#(signed)"}"#.utf8)
        ).status
    }

    /// A minute past a new token's report deadline (ten days, Apple's limit; the client set none
    /// shorter), on the web store's clock too.
    func passTheReportDeadline() {
        clock.set(clock.get().addingTimeInterval(10 * 86_400 + 60))
        stripe.clock.set(clock.get())
    }

    /// One pass of the sweep, then everything it queued sent.
    func sweepAndSend() async throws {
        try await harness.service.reportExternalPurchases()
        try await OutboxDrain.wait(harness.pool)
    }

    /// Every token's state and last error, for a failure's message.
    func tokenRows() async throws -> [String] {
        try await harness.pool.query(
            "SELECT state || ' ' || COALESCE(last_error, '') || ' ' || COALESCE(last_answer, '') AS row FROM external_purchase_tokens ORDER BY id"
        ).map { try $0.decode("row", as: String.self) }
    }

    func state(of reportID: String) async throws -> String? {
        try await harness.pool.query(
            "SELECT state FROM external_purchase_tokens WHERE report_id = \(reportID)"
        ).first?.decode("state", as: String.self)
    }
}

/// Google Play's external transactions from web sales, end to end, against a fake of the
/// `externaltransactions` API behind Google's OAuth.
@Suite struct GoogleExternalTransactionsEndToEnd {
    @Test func aGoogleExternalTransactionAndItsRefundsAreCreatedOnceEach() async throws {
        let google = try FakeGooglePlay()
        let shop = try await ReportingShop.start(google: google)
        defer {
            shop.stop()
            Task.detached { await google.shutdown() }
        }
        let token = "ext-txn-token-" + UUID().uuidString.lowercased()
        let sale = shop.stripe.sale(player: "p", lines: [.init("prod_gems", unitAmount: 400)])
        let registered = try await shop.harness.client.post(
            "/v1/external-purchase-tokens",
            json: [
                "store": "google_play", "token": token, "package_name": "com.example.game", "player_id": "p",
                "web_store": "stripe", "order_id": sale.paymentIntent,
            ], version: "2")
        #expect(registered.status == 200, "\(registered.text)")
        // Google takes the create and its answer is lost once: the retry creates nothing twice.
        google.state.loseExternalTransactionAnswers.set(1)
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        var held = google.externalTransactions(package: "com.example.game")
        let rows = try await shop.tokenRows()
        try #require(held.count == 1, "\(rows)")
        #expect(held[0].token == token && held[0].originalMicros == 4_000_000 && held[0].currency == "USD")
        #expect(held[0].regionCode == "IE" && !held[0].recurring, "a one-time purchase")
        try await shop.refund(sale.charge, amount: 100)
        google.state.loseExternalTransactionAnswers.set(1)
        try await shop.sweepAndSend()
        try await shop.refund(sale.charge)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        held = google.externalTransactions(package: "com.example.game")
        #expect(held.count == 1)
        #expect(held.first?.currentMicros == 0)
        #expect(held.first?.refunds.count == 2, "one partial refund and the rest: \(held.first?.refunds ?? [])")
        #expect(try await shop.state(of: token) == "reported")
        // A Google token with no sale is never reported as such.
        let lonely = try await shop.harness.client.post(
            "/v1/external-purchase-tokens",
            json: ["store": "google_play", "token": "ext-lonely-token", "package_name": "com.example.game"],
            version: "2")
        #expect(lonely.status == 200)
        shop.clock.set(shop.clock.get().addingTimeInterval(2 * 86_400))
        try await shop.sweepAndSend()
        #expect(google.externalTransactions(package: "com.example.game").count == 1)
        #expect(try await shop.state(of: "ext-lonely-token") == "waiting")
    }

    @Test func aTaxedSaleIsCreatedWithItsTaxAndAPartialRefundBeforeTax() async throws {
        let google = try FakeGooglePlay()
        let shop = try await ReportingShop.start(google: google)
        defer {
            shop.stop()
            Task.detached { await google.shutdown() }
        }
        let token = "ext-taxed-token-" + UUID().uuidString.lowercased()
        // 10.00 EUR with 23 % VAT on top.
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 1000, tax: 230)], currency: "eur",
            metadata: ["external_purchase_token": token])
        let registered = try await shop.harness.client.post(
            "/v1/external-purchase-tokens",
            json: ["store": "google_play", "token": token, "package_name": "com.example.game", "player_id": "p"],
            version: "2")
        #expect(registered.status == 200, "\(registered.text)")
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        var held = google.externalTransactions(package: "com.example.game")
        try #require(held.count == 1)
        #expect(held[0].originalMicros == 10_000_000, "before tax")
        #expect(held[0].originalTaxMicros == 2_300_000 && held[0].currency == "EUR")
        try await shop.refund(sale.charge, amount: 615)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        held = google.externalTransactions(package: "com.example.game")
        #expect(held.first?.currentMicros == 5_000_000, "half refunded, counted before tax")
        #expect(held.first?.refunds.count == 1)
    }

    @Test func aSubscriptionCarryingAPlayTokenIsCreatedAsARecurringTransaction() async throws {
        let google = try FakeGooglePlay()
        let shop = try await ReportingShop.start(google: google)
        defer {
            shop.stop()
            Task.detached { await google.shutdown() }
        }
        // The token only in the checkout: its store is found from the token, its app the client's one package.
        let token = "ext-sub-token-" + UUID().uuidString.lowercased()
        let subscribed = shop.stripe.subscribe(
            player: "p", product: "prod_pass", unitAmount: 500, metadata: ["external_purchase_token": token])
        try await shop.paid(subscribed.session)
        try await shop.sweepAndSend()
        let held = google.externalTransactions(package: "com.example.game")
        let rows = try await shop.tokenRows()
        try #require(held.count == 1, "\(rows)")
        #expect(held[0].recurring && held[0].token == token && held[0].originalMicros == 5_000_000)
        // Its renewal is a transaction of its own naming the first, without the token.
        let renewal = shop.stripe.nextPeriod(of: subscribed.subscription, paid: true)
        #expect(try await shop.push(try shop.stripe.webhook("invoice.paid", about: renewal)) == 200)
        try await shop.sweepAndSend()
        try await shop.sweepAndSend()
        let renewals = google.externalTransactions(package: "com.example.game").filter { $0.initialID != nil }
        let afterRenewal = try await shop.tokenRows()
        try #require(renewals.count == 1, "\(afterRenewal)")
        #expect(renewals[0].initialID == held[0].id && renewals[0].recurring && renewals[0].token.isEmpty)
        #expect(renewals[0].originalMicros == 5_000_000)
        // Another app's App Store token is the App Store's, refused: never taken for a Play token.
        let foreign = ReportingShop.appleToken(bundleID: "com.other.game")
        let sale = shop.stripe.sale(
            player: "p", lines: [.init("prod_gems", unitAmount: 199)],
            metadata: ["external_purchase_token": foreign.raw])
        try await shop.paid(sale.session)
        try await shop.sweepAndSend()
        #expect(google.externalTransactions(package: "com.example.game").count == 2)
        let refused = try await shop.harness.pool.query(
            "SELECT store, state FROM external_purchase_tokens WHERE token = \(foreign.raw)"
        ).map { "\(try $0.decode("store", as: String.self)) \(try $0.decode("state", as: String.self))" }
        #expect(refused == [" refused"], "\(refused)")
    }
}
