import Foundation
import Postgres
import TestSupport
import Testing

@testable import ReceiptGate

/// `receiptgate products`: a client's catalog set, listed and removed as an operator types it,
/// validated before anything is written, and every change audited.
@Suite struct ProductCatalogCommand {
    @Test func theCatalogIsSetListedRemovedAndAudited() async throws {
        let environment = try await Binary.databaseEnvironment()
        let made = try await Binary.run(
            ["client", "create", "--name", "g", "--bundle-id", "com.example.game"], environment)
        let client = try #require(Binary.json(made.stdout)["client_id"] as? String, "\(made.stderr)")
        // One entitlement from products of two stores; one product granting two.
        for (store, product, names) in [
            ("app_store", "com.game.vip.monthly", ["vip"]), ("google_play", "vip_monthly", ["vip"]),
            ("app_store", "com.game.bundle", ["no_ads", "season_pass_3", "no_ads"]),
        ] {
            let set = try await Binary.run(
                ["products", "set", "--client", client, "--store", store, "--product-id", product]
                    + names.flatMap { ["--entitlement", $0] }, environment)
            #expect(set.status == 0, "\(set.stderr)")
        }
        let listed = try await Binary.run(["products", "list", "--client", client], environment)
        let products = try #require(Binary.json(listed.stdout)["products"] as? [[String: Any]], "\(listed.stdout)")
        #expect(
            products.map {
                "\($0["store"] ?? "") \($0["product_id"] ?? "") \(($0["entitlements"] as? [String])?.joined(separator: ",") ?? "")"
            }
                == [
                    "app_store com.game.bundle no_ads,season_pass_3", "app_store com.game.vip.monthly vip",
                    "google_play vip_monthly vip",
                ], "\(listed.stdout)")

        // Set again: exactly what is given.
        _ = try await Binary.run(
            [
                "products", "set", "--client", client, "--store", "app_store", "--product-id", "com.game.bundle",
                "--entitlement", "no_ads",
            ], environment)
        let removed = try await Binary.run(
            ["products", "remove", "--client", client, "--store", "google_play", "--product-id", "vip_monthly"],
            environment)
        #expect(try Binary.json(removed.stdout)["removed"] as? Bool == true)
        let after =
            try Binary.json(try await Binary.run(["products", "list", "--client", client], environment).stdout)[
                "products"] as? [[String: Any]]
        #expect(after?.count == 2 && (after?.first?["entitlements"] as? [String]) == ["no_ads"], "\(after ?? [])")

        let pool = PostgresPool(.init(connectionString: try #require(environment["DATABASE_URL"]), size: 1))
        defer { pool.shutdown() }
        let audited = try await pool.query("SELECT action FROM console_audit WHERE who = 'cli' ORDER BY id").map {
            try $0.decode("action", as: String.self)
        }
        #expect(audited == ["product.set", "product.set", "product.set", "product.set", "product.remove"])
    }

    @Test func badInputIsAUsageErrorAndWritesNothing() async throws {
        let environment = try await Binary.databaseEnvironment()
        let made = try await Binary.run(["client", "create", "--name", "g"], environment)
        let client = try #require(Binary.json(made.stdout)["client_id"] as? String, "\(made.stderr)")
        let cases: [([String], Int32, String)] = [
            (
                [
                    "products", "set", "--client", client, "--store", "blockbuster", "--product-id", "p",
                    "--entitlement", "vip",
                ], 2, "unknown store"
            ),
            (
                [
                    "products", "set", "--client", client, "--store", "app_store", "--product-id", "p", "--entitlement",
                    "VIP!",
                ], 2, "--entitlement must be"
            ),
            (
                ["products", "set", "--client", client, "--store", "app_store", "--product-id", "p"], 2,
                "--entitlement is required"
            ),
            (
                [
                    "products", "set", "--client", client, "--store", "app_store", "--product-id",
                    String(repeating: "p", count: 300), "--entitlement", "vip",
                ], 2, "--product-id"
            ),
            (["products", "list"], 2, "--client is required"),
            (["products", "list", "--client", "rgc_nobody"], 1, "rgc_nobody"),
            (["products", "frobnicate"], 2, "unknown products action"),
        ]
        for (arguments, status, message) in cases {
            let result = try await Binary.run(arguments, environment)
            #expect(
                result.status == status && result.stderr.contains(message),
                "\(arguments): \(result.status) \(result.stderr)")
        }
        let listed = try await Binary.run(["products", "list", "--client", client], environment)
        #expect((try Binary.json(listed.stdout)["products"] as? [Any])?.isEmpty == true)
    }
}

/// The catalog through the admin API: the same checks and audit as the command line.
@Suite struct ProductCatalogAdmin {
    @Test func theAdminAPISetsListsAndRemovesProducts() async throws {
        let token = "catalog-admin-" + String(repeating: "c", count: 32)
        let harness = try await VerifyHarness.start(adminToken: token)
        defer { harness.stop() }
        let base = "/admin/clients/\(harness.client.clientID)/products"
        let auth = ["Authorization": "Bearer \(token)", "Content-Type": "application/json"]
        func call(_ method: String, _ path: String, _ body: String? = nil) async throws -> RawHTTP.Response {
            try await RawHTTP.request(
                port: harness.service.port, method: method, path: path, headers: auth,
                body: body.map { Data($0.utf8) } ?? Data())
        }
        let set = try await call("PUT", "\(base)/app_store/com.game.vip.monthly", #"{"entitlements":["vip","no_ads"]}"#)
        #expect(try set.status == 200 && (set.json()["entitlements"] as? [String]) == ["no_ads", "vip"], "\(set.text)")
        #expect(try await call("PUT", "\(base)/blockbuster/x", #"{"entitlements":["vip"]}"#).status == 400)
        #expect(try await call("PUT", "\(base)/app_store/x", #"{"entitlements":["VIP"]}"#).status == 400)
        #expect(try await call("PUT", "\(base)/app_store/x", #"{"entitlements":[]}"#).status == 400)
        #expect(
            try await call("PUT", "/admin/clients/rgc_nobody/products/app_store/x", #"{"entitlements":["vip"]}"#).status
                == 404)
        #expect(try await RawHTTP.request(port: harness.service.port, path: base).status == 401)
        let listed = try await call("GET", base).json()["products"] as? [[String: Any]]
        #expect(listed?.count == 1 && listed?.first?["product_id"] as? String == "com.game.vip.monthly")
        #expect(try await call("DELETE", "\(base)/app_store/com.game.vip.monthly").json()["removed"] as? Bool == true)
        #expect((try await call("GET", base).json()["products"] as? [Any])?.isEmpty == true)
        let audited = try await harness.pool.query(
            "SELECT action FROM console_audit WHERE who = 'admin-api' ORDER BY id"
        ).map { try $0.decode("action", as: String.self) }
        #expect(audited == ["product.set", "product.remove"])
    }
}

/// The catalog on the console's client page: set and removed through forms (CSRF-checked like
/// every console form), refused input shown back, every change audited under the session.
@Suite struct ProductCatalogConsole {
    @Test func productsAreSetAndRemovedFromTheClientPage() async throws {
        let token = "catalog-console-" + String(repeating: "k", count: 32)
        let harness = try await VerifyHarness.start(adminToken: token)
        defer { harness.stop() }
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: token)
        let page = "/console/clients/\(harness.client.clientID)"
        #expect(try await browser.get(page).text.contains(#"id="set-product""#))
        let set = try await browser.post(
            "\(page)/products",
            [("store", "app_store"), ("product_id", "com.game.vip"), ("entitlements", "vip, no_ads")])
        #expect(set.status == 200 && set.text.contains(#"<td class="entitlements">no_ads, vip</td>"#), "\(set.status)")
        let refused = try await browser.post(
            "\(page)/products", [("store", "app_store"), ("product_id", "x"), ("entitlements", "<b>VIP</b>")])
        #expect(
            refused.status == 422 && refused.text.contains("--entitlement must be")
                && !refused.text.contains("<b>VIP</b>"), "\(refused.status)")
        let removed = try await browser.post(
            "\(page)/products/remove", [("store", "app_store"), ("product_id", "com.game.vip")])
        #expect(removed.status == 200 && removed.text.contains("No product is mapped"))
        let audited = try await harness.pool.query(
            "SELECT action FROM console_audit WHERE action LIKE 'product.%' ORDER BY id"
        ).map { try $0.decode("action", as: String.self) }
        #expect(audited == ["product.set", "product.remove"])
    }
}
