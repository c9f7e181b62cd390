import Foundation
import ReceiptCore
import Stripe
import StripeTestSupport
import TestSupport
import Testing

/// Reconciliation reads each client's event list with its own key, page by page from a saved
/// cursor, and hands over every event read back as its webhook would have been.
@Suite struct StripePollTests {
    static func run(
        _ harness: StripeHarness, run: MemoryPollRun, owners: [ClientWithStoreCredentials]? = nil
    ) async throws -> [StoreNotification] {
        let poller = try #require(harness.provider.registration.poller)
        let found = LockedBox<[StoreNotification]>([])
        try await poller.poll(owners: owners ?? [harness.fake.owner()], run: run) { batch in
            found.update { $0 += batch }
        }
        return found.get()
    }

    @Test func aWebhookThatNeverArrivedIsFoundInTheEventList() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p-lost", lines: [.init("prod_gems", unitAmount: 199)])
        let eventID = harness.fake.event("checkout.session.completed", about: sale.session)
        let found = try await Self.run(harness, run: MemoryPollRun())
        #expect(found.map(\.notificationID) == ["\(eventID)/\(sale.lineItems[0])"])
        #expect(found.first?.event.claimedBy == "p-lost")
        #expect(found.first?.clientID == "client-stripe")
        let listed = harness.fake.state.requests.get().filter { $0.path == "/v1/events" }
        #expect(listed.count == 1)
        let query = try #require(listed.first?.query)
        #expect(query.contains { $0.0 == "created[gte]" })
        #expect(query.contains { $0 == ("types[]", "charge.refunded") })
    }

    @Test func theListIsReadPageByPageAndTheCursorSavedAfterEach() async throws {
        let harness = try StripeHarness()
        harness.fake.state.eventPageSize.set(2)
        var expected: [String] = []
        for index in 0..<5 {
            let sale = harness.fake.sale(player: "p\(index)", lines: [.init("prod_gems", unitAmount: 199)])
            let id = harness.fake.event("checkout.session.completed", about: sale.session)
            expected.append("\(id)/\(sale.lineItems[0])")
        }
        // An event of a type not followed is not even listed.
        harness.fake.event("customer.created", about: "cus_1")
        let run = MemoryPollRun()
        let found = try await Self.run(harness, run: run)
        #expect(Set(found.map(\.notificationID)) == Set(expected))
        #expect(run.pages == 3)
        let cursor = try #require(try await run.cursor("stripe.events:client-stripe"))
        #expect(!cursor.contains("pageToken"), "a window read to its end leaves no page token")

        // The next run starts where this one ended (less the overlap) and finds the same events,
        // which the core applies once.
        let again = try await Self.run(harness, run: run)
        #expect(Set(again.map(\.notificationID)) == Set(expected))
    }

    @Test func aCursorStripeNoLongerHasIsDroppedAndTheWindowReadAgain() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        harness.fake.event("checkout.session.completed", about: sale.session)
        let run = MemoryPollRun()
        let since = Int64((harness.fake.now.timeIntervalSince1970 - 3600) * 1000)
        try await run.setCursor(
            "stripe.events:client-stripe",
            to: #"{"since":\#(since),"until":\#(since + 7_200_000),"pageToken":"evt_gone"}"#)
        await #expect(throws: (any Error).self) { _ = try await Self.run(harness, run: run) }
        let reset = try #require(try await run.cursor("stripe.events:client-stripe"))
        #expect(!reset.contains("evt_gone"))
        let found = try await Self.run(harness, run: run)
        #expect(found.count == 1)
    }

    @Test func aRateLimitStopsTheClientsRunAndSaysHowLongToWait() async throws {
        let harness = try StripeHarness()
        harness.fake.state.retryAfterSeconds.set(90)
        harness.fake.state.failuresFirst.set(["events": [429]])
        do {
            _ = try await Self.run(harness, run: MemoryPollRun())
            Issue.record("a rate-limited run must fail")
        } catch let failures as PollTargets.Failures {
            #expect(failures.retryAfter == .seconds(90))
            #expect(failures.description.contains("client-stripe"))
        }
    }

    @Test func aClientWithoutAKeyIsReportedAndTheOthersRead() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        harness.fake.event("checkout.session.completed", about: sale.session)
        let keyless = ClientWithStoreCredentials(
            client: harness.fake.owner(clientID: "keyless").client, credentials: [:])
        let found = LockedBox<[StoreNotification]>([])
        let poller = try #require(harness.provider.registration.poller)
        await #expect(throws: PollTargets.Failures.self) {
            try await poller.poll(owners: [keyless, harness.fake.owner()], run: MemoryPollRun()) { batch in
                found.update { $0 += batch }
            }
        }
        #expect(found.get().count == 1)
    }

    @Test func reconciliationIsOffAtZero() throws {
        let configuration = try StripeConfiguration.fromEnvironment(["RECEIPTGATE_STRIPE_RECONCILE_INTERVAL": "0"])
        #expect(configuration.reconcileInterval == nil)
        #expect(throws: ConfigurationInvalid.self) {
            try StripeConfiguration.fromEnvironment(["RECEIPTGATE_STRIPE_RECONCILE_INTERVAL": "soon"])
        }
        #expect(try StripeConfiguration.fromEnvironment([:]).reconcileInterval == .seconds(900))
    }
}
