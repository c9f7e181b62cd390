import Foundation
import Testing

@testable import ReceiptGate

/// What a newcomer reads in the console: clients by name with the id on hover, each purchase's
/// environment, long ids shortened with the full value on hover, and why a player owns nothing.
@Suite struct ConsoleNewcomer {
    @Test func namesEnvironmentsAndWhyAPlayerOwnsNothing() async throws {
        let fixture = try await AnalyticsPage.start()
        defer { fixture.harness.stop() }
        let client = fixture.harness.client.clientID
        let name = try #require(try await fixture.harness.service.clients.find(client)).name

        let purchases = try await fixture.browser.get("/console/purchases")
        #expect(
            purchases.text.contains(#"<td class="client"><span class="client" title="\#(client)">\#(name)</span></td>"#)
        )
        #expect(purchases.text.contains(#"<span class="client" title="\#(fixture.other)">Second game</span>"#))
        #expect(purchases.text.contains(#"<td class="environment">sandbox</td>"#))
        #expect(purchases.text.contains("<th scope=\"col\">Environment</th>"))

        let purchase = try await fixture.browser.get("/console/purchases/app_store/an-2")
        #expect(purchase.text.contains(#"<a href="/console/players/player-an-2">player-an-2</a>"#))
        #expect(purchase.text.contains(#"<a href="/console/clients/\#(client)"><span class="client""#))
        #expect(purchase.text.contains(#"id="purchase-refund-requests-empty""#))
        #expect(purchase.text.contains(#"id="consumption-report-empty""#))

        let stranger = try await fixture.browser.get("/console/players/nobody-at-all")
        #expect(stranger.text.contains("no purchase is on record for the player id nobody-at-all"))
        let unmapped = try await fixture.browser.get("/console/players/player-an-2")
        #expect(unmapped.text.contains("none of their 1 purchases is of a product a client&#39;s catalog maps"))
        #expect(unmapped.text.contains("(gems100)"))

        #expect(
            ConsoleText.short("0190f3a2-7c4e-7d1a-9b2c-3d4e5f6a7b8c").markup.contains(
                #"title="0190f3a2-7c4e-7d1a-9b2c-3d4e5f6a7b8c""#))
        #expect(ConsoleText.short("0190f3a2-7c4e-7d1a-9b2c-3d4e5f6a7b8c").markup.contains("…"))
        #expect(ConsoleText.short("2000000000008101").markup == "<code>2000000000008101</code>")
        #expect(ConsoleText.money(-995, "EUR") == "-1.00 EUR" && ConsoleText.money(4_990, "USD") == "4.99 USD")
        #expect(ConsoleText.money(1_234_505, "JPY") == "1234.51 JPY")
    }

    @Test func anEmptyCellIsNotColouredAsAnError() {
        let css = ConsoleAssets.stylesheet
        #expect(css.contains("p.error { background"))
        #expect(!css.contains("\n        .error {"), "a td.error (an empty poll error) would be painted as an alert")
    }
}
