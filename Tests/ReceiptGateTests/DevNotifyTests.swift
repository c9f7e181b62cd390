import Foundation
import TestSupport
import Testing

/// `receiptgate dev notify`: the App Store's signed notification of a dev purchase, sent to the
/// running service, moves the ledger as Apple's would.
@Suite struct DevNotifyCommand {
    @Test func aSubscriptionRenewsAndExpiresAndARefundRequestIsShown() async throws {
        var environment = try await Binary.databaseEnvironment()
        let root = try #require(environment["RECEIPTGATE_DATA_DIR"]) + "/dev-pki/root.pem"
        let created = try await Binary.run(
            ["client", "create", "--name", "dev", "--bundle-id", "com.example.devgame", "--environments", "sandbox"],
            environment)
        let client = try Binary.json(created.stdout)
        let clientID = try #require(client["client_id"] as? String),
            secret = try #require(client["client_secret"] as? String)
        let purchase = try await Binary.run(
            [
                "dev", "purchase", "--bundle-id", "com.example.devgame", "--product-id", "vip.month", "--type",
                "auto_renewable",
            ],
            environment)
        let original = try #require(try DevPurchaseCommand.payload(ofJWS: purchase.stdout)["transactionId"] as? String)
        let (server, port) = try await DevPurchaseCommand.serve(
            environment.merging(["RECEIPTGATE_APPLE_ROOT_CERTS": root]) { $1 })
        defer { server.send(SIGTERM) }
        environment["RECEIPTGATE_URL"] = "http://127.0.0.1:\(port)"
        let signed = SignedClient(port: port, clientID: clientID, secret: secret)
        let verified = try await signed.post(
            "/v1/verify",
            json: [
                "store": "app_store", "receipt": purchase.stdout.trimmingCharacters(in: .newlines), "player_id": "p1",
            ])
        #expect(verified.status == 200, "\(verified.text)")

        func subscription() async throws -> [String: Any] {
            try await signed.get("/v1/subscriptions/app_store/\(original)").json()
        }
        let renewed = try await Binary.run(
            ["dev", "notify", "--type", "renewal", "--transaction", original], environment)
        #expect(renewed.status == 0, "\(renewed.stderr)")
        #expect(renewed.stdout.contains("accepted"), "\(renewed.stdout)")
        let next = try #require(
            renewed.stderr.split(separator: "\n").compactMap { $0.split(separator: " ").last.map(String.init) }
                .first { $0.count == 16 && $0.allSatisfy(\.isNumber) && $0 != original }, "\(renewed.stderr)")
        let afterRenewal = try await subscription()
        #expect(
            (afterRenewal["latest_transaction"] as? [String: Any])?["transaction_id"] as? String == next,
            "\(afterRenewal)")
        #expect(afterRenewal["auto_renew"] as? Bool == true)

        let expired = try await Binary.run(["dev", "notify", "--type", "expired", "--transaction", next], environment)
        #expect(expired.status == 0, "\(expired.stderr)")
        #expect(try await subscription()["status"] as? String == "expired")

        let asked = try await Binary.run(
            ["dev", "notify", "--type", "consumption-request", "--transaction", next], environment)
        #expect(asked.status == 0, "\(asked.stderr)")
        let adminless = try await RawHTTP.request(port: port, path: "/metrics").text
        #expect(adminless.contains("receiptgate_refund_requests{store=\"app_store\""), "\(adminless)")
    }

    @Test(arguments: [
        ["dev", "notify", "--transaction", "1"],
        ["dev", "notify", "--type", "chargeback", "--transaction", "1"],
        ["dev", "notify", "--type", "refund"],
        ["dev", "notify", "--type", "refund", "--transaction", "12ab"],
        ["dev", "notify", "--type", "refund", "--transaction", "4242424242424242"],
        ["dev", "notify", "--type", "refund", "--purchase", "/nonexistent/purchase.jws"],
    ])
    func aMistakeIsOneLineAndExitTwo(_ arguments: [String]) async throws {
        let result = try await Binary.run(arguments, try await Binary.databaseEnvironment())
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1 && result.stderr.hasPrefix("receiptgate: error: "))
    }

    @Test func aOneTimePurchaseDoesNotRenew() async throws {
        let environment = try await Binary.databaseEnvironment()
        let purchase = try await Binary.run(
            ["dev", "purchase", "--bundle-id", "com.example.devgame", "--product-id", "gems"], environment)
        let id = try #require(try DevPurchaseCommand.payload(ofJWS: purchase.stdout)["transactionId"] as? String)
        let result = try await Binary.run(["dev", "notify", "--type", "renewal", "--transaction", id], environment)
        #expect(result.status == 2 && result.stderr.contains("only a subscription renews"), "\(result.stderr)")
    }
}
