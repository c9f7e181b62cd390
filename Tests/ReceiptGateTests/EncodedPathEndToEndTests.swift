import AppStoreTestSupport
import Foundation
import ReceiptGate
import TestSupport
import Testing

/// An id with a `/` in it is sent percent-encoded (`guild%2F42`) and read back whole: the API and
/// the console route on the path as sent, and a version-2 signature covers it as sent.
@Suite struct EncodedPathIDs {
    static let player = "guild/42", encoded = "guild%2F42"
    static let adminToken = "encoded-paths-admin-" + String(repeating: "x", count: 32)

    /// A running service holding one non-consumable that grants `no_ads`, claimed for `guild/42`.
    static func start() async throws -> VerifyHarness {
        let harness = try await VerifyHarness.start(adminToken: adminToken)
        _ = try await harness.service.repositories.catalog.set(
            client: harness.client.clientID, store: "app_store", product: "noads",
            entitlements: ["no_ads"], by: "test")
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction([
                "transactionId": "2000000000009101", "originalTransactionId": "2000000000009101",
                "productId": "noads", "type": "Non-Consumable",
            ]))
        let verified = try await harness.client.post(
            "/v1/verify", json: ["store": "app_store", "receipt": receipt, "player_id": player])
        #expect(verified.status == 200, "\(verified.text)")
        return harness
    }

    @Test func aPlayerIDWithASlashIsReadBack() async throws {
        let harness = try await Self.start()
        defer { harness.stop() }
        let owned = try await harness.client.get("/v1/players/\(Self.encoded)/entitlements")
        #expect(owned.status == 200, "\(owned.text)")
        #expect(try owned.json()["player_id"] as? String == Self.player)
        let entitlements = try #require(try owned.json()["entitlements"] as? [[String: Any]])
        #expect(entitlements.map { $0["entitlement"] as? String } == ["no_ads"], "\(owned.text)")

        let listed = try await harness.client.get("/v1/players/\(Self.encoded)/transactions")
        #expect(listed.status == 200, "\(listed.text)")
        let transactions = try #require(try listed.json()["transactions"] as? [[String: Any]])
        #expect(transactions.map { $0["transaction_id"] as? String } == ["2000000000009101"], "\(listed.text)")

        // The signature covers the target as sent: one made over the decoded path does not match.
        let decodedSigned = try await harness.client.get(
            "/v1/players/\(Self.encoded)/entitlements",
            signedTarget: "/v1/players/\(Self.player)/entitlements")
        #expect(decodedSigned.status == 401, "\(decodedSigned.text)")
        // A broken escape is a 400, not a server error.
        let broken = try await harness.client.get("/v1/players/guild%2/entitlements")
        #expect(broken.status == 400, "\(broken.text)")
    }

    @Test func theConsolePlayerPageOfSuchAnIDIsFound() async throws {
        let harness = try await Self.start()
        defer { harness.stop() }
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.adminToken)
        // The purchases list links to the player's page with the id encoded, and that page is found.
        let purchases = try await browser.get("/console/purchases")
        #expect(
            purchases.text.contains(#"<a href="/console/players/\#(Self.encoded)">\#(Self.player)</a>"#),
            "\(purchases.text)")
        let page = try await browser.get("/console/players/\(Self.encoded)")
        #expect(page.status == 200, "\(page.text)")
        #expect(page.text.contains("<h1>Player \(Self.player)</h1>"), "\(page.text)")
        #expect(page.text.contains(#"<td class="entitlement">no_ads</td>"#), "\(page.text)")
    }
}
