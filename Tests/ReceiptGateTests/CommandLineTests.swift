import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptGate
import TestSupport
import Testing

@Suite struct CommandLineUsage {
    @Test(arguments: [
        ["client", "create"], ["client", "create", "--name"], ["client", "create", "--name", "x", "--bogus", "1"],
        ["client", "create", "--name", "x", "--game-id", "abc"],
        ["client", "create", "--name", "x", "--environments", "staging"],
        ["client", "create", "--name", "x", "--webhook-url", "ftp://x"],
        ["client", "create", "--name", "x", "--webhook-url", "http://game.example/hook"],
        ["client", "create", "--name", "x", "--webhook-url", "https://user:pw@game.example/hook"],
        ["client", "create", "--name", "x", "--delivery-url", "https:///nohost"],
        ["client", "create", "--name", "x", "--webhook-url", "https://a b.example/"],
        ["client", "create", "--name", "x", "--allow-insecure-url=maybe"], ["client", "show"],
        ["client", "frobnicate"],
        ["client", "show", "a", "b"], ["launch"], ["serve", "extra"], ["webhooks"],
        ["webhooks", "redeliver", "not-a-uuid"],
        ["webhooks", "list", "--bogus", "1"], ["notifications"], ["notifications", "list", "--bogus", "1"],
        ["notifications", "list", "extra"],
        ["client", "create", "--name", "x", "--consumption-consent=maybe"],
        ["client", "create", "--name", "x", "--refund-decline-at", "101"],
        ["client", "create", "--name", "x", "--refund-otherwise", "always"],
    ])
    func badArgumentsAreOneLineAndExitTwo(_ arguments: [String]) async throws {
        let result = try await Binary.run(arguments)
        #expect(result.status == 2)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1, "stderr was: \(result.stderr)")
        #expect(lines.first?.hasPrefix("receiptgate: error: ") == true)
        #expect(result.stdout.isEmpty)
    }

    @Test func errorsNameTheProblem() async throws {
        #expect(try await Binary.run(["client", "create"]).stderr.contains("--name"))
        #expect(
            try await Binary.run(["client", "create", "--name", "x", "--game-id", "abc"]).stderr.contains("--game-id"))
        #expect(try await Binary.run(["client", "show"]).stderr.contains("CLIENT_ID"))
    }

    @Test(arguments: [
        ["--help"], ["serve", "--help"], ["migrate", "--help"], ["version", "--help"], ["client", "--help"],
        ["client", "create", "--help"], ["client", "list", "--help"], ["client", "show", "--help"],
        ["client", "update", "--help"], ["client", "rotate-secret", "--help"], ["client", "disable", "--help"],
        ["webhooks", "--help"], ["webhooks", "list", "--help"], ["webhooks", "redeliver", "--help"],
        ["notifications", "--help"], ["notifications", "list", "--help"],
    ])
    func everyCommandHasHelp(_ arguments: [String]) async throws {
        let result = try await Binary.run(arguments)
        #expect(result.status == 0)
        #expect(result.stdout.contains("Usage: receiptgate"))
    }

    /// What a client can be given is listed where an operator looks: every core setting in the
    /// help of `client create` and `client update` (the refund policy, the delivery URL, plain http).
    @Test(arguments: [["client", "create", "--help"], ["client", "update", "--help"], ["client", "--help"]])
    func theClientHelpListsEveryCoreSetting(_ arguments: [String]) async throws {
        let help = try await Binary.run(arguments).stdout
        for option in ClientSettingsInput.coreOptions {
            #expect(
                help.contains("--\(option) ") || help.contains("--\(option)\n"),
                "\(arguments) does not list --\(option)")
        }
    }

    @Test func versionPrintsTheVersion() async throws {
        let result = try await Binary.run(["version"])
        #expect(result.status == 0)
        #expect(try Binary.json(result.stdout)["version"] as? String == "0.1.0")
    }

    @Test func badConfigurationStopsStartUpNamingTheVariable() async throws {
        let result = try await Binary.run(["serve"], ["RECEIPTGATE_PORT": "http"])
        #expect(result.status == 78)
        #expect(result.stderr.contains("RECEIPTGATE_PORT"))
        let key = try await Binary.run(["client", "list"], ["RECEIPTGATE_MASTER_KEY": "dG9vIHNob3J0"])
        #expect(key.status == 78)
        #expect(key.stderr.contains("RECEIPTGATE_MASTER_KEY"))
    }
}

@Suite struct ClientAdministration {
    @Test func createShowListRotateDisable() async throws {
        let environment = try await Binary.databaseEnvironment()
        let created = try await Binary.run(
            [
                "client", "create", "--name", "Demo Game", "--game-id", "42",
                "--bundle-id", "com.example.game", "--bundle-id", "com.example.game.lite",
                "--environments", "production,sandbox",
                "--refund-callback-url", "https://game.example/refund",
            ], environment)
        #expect(created.status == 0, "stderr: \(created.stderr)")
        #expect(created.stdout.split(separator: "\n").count == 1, "one JSON object on one line")
        let object = try Binary.json(created.stdout)
        let clientID = try #require(object["client_id"] as? String)
        let secret = try #require(object["client_secret"] as? String)
        #expect(object["game_id"] as? Int == 42)
        #expect(
            (object["app_identifiers"] as? [String: Any])?["bundle_id"] as? [String] == [
                "com.example.game", "com.example.game.lite",
            ])
        #expect(object["environments"] as? [String] == ["production", "sandbox"])
        #expect(!created.stderr.contains(secret), "the secret must never reach a log")

        // The plaintext secret is nowhere in the database.
        let pool = PostgresPool(.init(connectionString: environment["DATABASE_URL"]!, size: 1))
        defer { pool.shutdown() }
        let rows = try await pool.query("SELECT clients::text AS row FROM clients")
        #expect(rows.count == 1)
        #expect(try !rows[0].decode("row", as: String.self).contains(secret))

        let shown = try await Binary.run(["client", "show", clientID], environment)
        #expect(shown.status == 0)
        #expect(!shown.stdout.contains(secret))
        #expect(try Binary.json(shown.stdout)["client_secret"] == nil)
        #expect(try Binary.json(shown.stdout)["name"] as? String == "Demo Game")

        let listed = try await Binary.run(["client", "list"], environment)
        #expect(listed.status == 0)
        #expect(!listed.stdout.contains(secret))
        #expect((try Binary.json(listed.stdout)["clients"] as? [[String: Any]])?.count == 1)

        let updated = try await Binary.run(
            ["client", "update", clientID, "--environments", "production", "--refund-callback-url", ""], environment)
        #expect(updated.status == 0)
        #expect(try Binary.json(updated.stdout)["environments"] as? [String] == ["production"])
        #expect(try Binary.json(updated.stdout)["refund_callback_url"] == nil)

        let before = try await pool.query("SELECT secret_ciphertext FROM clients")[0].decode(
            "secret_ciphertext", as: Data.self)
        let rotated = try await Binary.run(["client", "rotate-secret", clientID], environment)
        #expect(rotated.status == 0)
        let newSecret = try #require(try Binary.json(rotated.stdout)["client_secret"] as? String)
        #expect(newSecret != secret)
        let after = try await pool.query("SELECT secret_ciphertext FROM clients")[0].decode(
            "secret_ciphertext", as: Data.self)
        #expect(after != before, "rotation replaced the stored secret")
        // What the service will check signatures against is now the new secret, never the old one.
        let box = SecretBox(masterKey: try #require(Data(base64Encoded: environment["RECEIPTGATE_MASTER_KEY"]!)))
        let stored = try box.open(after, owner: clientID)
        #expect(stored == newSecret)
        #expect(stored != secret)
        #expect(!rotated.stderr.contains(newSecret))

        let disabled = try await Binary.run(["client", "disable", clientID], environment)
        #expect(try Binary.json(disabled.stdout)["disabled"] as? Bool == true)

        let missing = try await Binary.run(["client", "show", "rgc_nope"], environment)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("rgc_nope"))
    }

    @Test func webhooksListAndRedeliver() async throws {
        let environment = try await Binary.databaseEnvironment()
        let empty = try await Binary.run(["webhooks", "list", "--failed"], environment)
        #expect(empty.status == 0, "stderr: \(empty.stderr)")
        #expect(try Binary.json(empty.stdout)["events"] as? [Any] != nil)
        let id = UUID().uuidString
        let missing = try await Binary.run(["webhooks", "redeliver", id], environment)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no webhook event \(id.lowercased())"), "stderr: \(missing.stderr)")
        #expect(!missing.stderr.contains("client"), "an unknown event is not said to be a client")
    }

    @Test func migrateAppliesOnceThenFindsNothing() async throws {
        let environment = try await Binary.databaseEnvironment()
        let first = try await Binary.run(["migrate"], environment)
        #expect(first.status == 0, "stderr: \(first.stderr)")
        #expect(try Binary.json(first.stdout)["applied"] as? [Int] == Schema.migrations.map(\.version))
        let second = try await Binary.run(["migrate"], environment)
        #expect(try Binary.json(second.stdout)["applied"] as? [Int] == [])
    }

    @Test func firstRunNeedsNoConfigurationAndKeepsItsData() async throws {
        // No DATABASE_URL, no master key: the embedded cluster and a generated key.
        let dataDirectory = TestDatabase.temporaryDirectory("first-run").appendingPathComponent("data")
        defer { try? FileManager.default.removeItem(at: dataDirectory.deletingLastPathComponent()) }
        let environment = ["RECEIPTGATE_DATA_DIR": dataDirectory.path]
        let initialized = try await Binary.run(["init"], environment)
        #expect(initialized.status == 0, "stderr: \(initialized.stderr)")
        let made = try Binary.json(initialized.stdout)
        #expect(
            made["master_key_created"] as? Bool == true
                && made["migrations_applied"] as? [Int] == Schema.migrations.map(\.version), "\(made)")
        let again = try await Binary.run(["init"], environment)
        #expect(
            try Binary.json(again.stdout)["master_key_created"] as? Bool == false,
            "init keeps what exists: \(again.stdout)")
        let created = try await Binary.run(["client", "create", "--name", "First"], environment)
        #expect(created.status == 0, "stderr: \(created.stderr)")
        let clientID = try #require(try Binary.json(created.stdout)["client_id"] as? String)
        let keyAttributes = try FileManager.default.attributesOfItem(
            atPath: dataDirectory.appendingPathComponent("master.key").path)
        #expect((keyAttributes[.posixPermissions] as? Int) == 0o600)

        // A second process finds the same cluster and data (the first stopped the server on exit).
        let listed = try await Binary.run(["client", "list"], environment)
        #expect(listed.status == 0, "stderr: \(listed.stderr)")
        #expect(listed.stdout.contains(clientID))
        #expect(listed.stderr.contains("starting embedded PostgreSQL"))
    }

    /// Run from a folder that is not the service's, a command that reads or changes state fails,
    /// naming where it looked and the settings that point elsewhere, and makes nothing there.
    @Test(arguments: [
        ["client", "list"], ["webhooks", "list"], ["client", "create", "--name", "Stray"], ["migrate"],
        ["products", "list", "--client", "rgc_stray"], ["notifications", "list"],
        ["reconcile", "--store", "app_store"],
        ["keys", "rotate"],
    ])
    func commandsFailWhereThereIsNoDataDirectory(_ arguments: [String]) async throws {
        let dataDirectory = TestDatabase.temporaryDirectory("no-data").appendingPathComponent("data")
        defer { try? FileManager.default.removeItem(at: dataDirectory.deletingLastPathComponent()) }
        let result = try await Binary.run(arguments, ["RECEIPTGATE_DATA_DIR": dataDirectory.path])
        #expect(result.status == 78, "a configuration error, not an empty answer: \(result.stdout) \(result.stderr)")
        #expect(result.stdout.isEmpty, "\(result.stdout)")
        #expect(
            result.stderr.contains(dataDirectory.path) && result.stderr.contains("RECEIPTGATE_DATA_DIR")
                && result.stderr.contains("DATABASE_URL") && result.stderr.contains("receiptgate init"),
            "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dataDirectory.path), "no cluster, no master key made")
    }

    /// With a database but no master key, a command refuses rather than seal with a key of its own.
    @Test func aCommandDoesNotMakeAMasterKey() async throws {
        var environment = try await Binary.databaseEnvironment()
        environment["RECEIPTGATE_MASTER_KEY"] = nil
        let result = try await Binary.run(["client", "create", "--name", "Keyless"], environment)
        #expect(result.status == 78, "\(result.stdout) \(result.stderr)")
        #expect(
            result.stderr.contains("RECEIPTGATE_MASTER_KEY") && result.stderr.contains("master.key"), "\(result.stderr)"
        )
        let directory = try #require(environment["RECEIPTGATE_DATA_DIR"])
        #expect(!FileManager.default.fileExists(atPath: directory + "/master.key"))
    }

    /// `init` beside a database that already holds clients, with no key: it will not make a new
    /// key that opens none of their secrets.
    @Test func initRefusesANewKeyForADatabaseThatHoldsClients() async throws {
        var environment = try await Binary.databaseEnvironment()
        #expect(try await Binary.run(["client", "create", "--name", "Sealed"], environment).status == 0)
        environment["RECEIPTGATE_MASTER_KEY"] = nil
        let result = try await Binary.run(["init"], environment)
        #expect(
            result.status == 78 && result.stderr.contains("already holds clients"), "\(result.stdout) \(result.stderr)")
        let directory = try #require(environment["RECEIPTGATE_DATA_DIR"])
        #expect(!FileManager.default.fileExists(atPath: directory + "/master.key"))
    }

    /// The refund policy set from the command line is what the client shows and answers with.
    /// A store whose endpoint is one client's (a web shop): `create` prints where it posts.
    @Test func createPrintsTheClientsOwnNotificationRoutes() async throws {
        let environment = try await Binary.databaseEnvironment()
        let web = try await Binary.run(
            [
                "client", "create", "--name", "shop", "--stripe-account", "acct_1Shop",
                "--stripe-api-key", "sk_test_123", "--stripe-webhook-secret", "whsec_abc",
            ], environment)
        #expect(web.status == 0, "\(web.stderr)")
        let object = try Binary.json(web.stdout)
        let id = try #require(object["client_id"] as? String)
        #expect(
            (object["notification_routes"] as? [String: String])?["stripe"] == "/v1/notifications/stripe/\(id)",
            "\(web.stdout)")
        #expect(!web.stdout.contains("sk_test_123") && !web.stdout.contains("whsec_abc"), "secrets are sealed")
        let apps = try await Binary.run(
            ["client", "create", "--name", "app", "--bundle-id", "com.example.g"], environment)
        #expect(try Binary.json(apps.stdout)["notification_routes"] == nil, "an app's notifications have shared routes")
    }

    @Test func theRefundPolicyIsSetFromTheCommandLine() async throws {
        let environment = try await Binary.databaseEnvironment()
        let made = try await Binary.run(
            [
                "client", "create", "--name", "g", "--consumption-consent", "--refund-decline-at", "70",
                "--refund-otherwise", "neutral", "--sample-content",
            ], environment)
        #expect(made.status == 0, "\(made.stderr)")
        let settings = try Binary.json(made.stdout)["settings"] as? [String: [String]] ?? [:]
        #expect(
            settings["refunds.consumption_consent"] == ["on"] && settings["refunds.decline_at_percent"] == ["70"]
                && settings["refunds.otherwise"] == ["neutral"] && settings["refunds.sample_content"] == ["on"],
            "\(made.stdout)")
        let id = try #require(Binary.json(made.stdout)["client_id"] as? String)
        let updated = try await Binary.run(
            ["client", "update", id, "--consumption-consent=off", "--refund-otherwise", ""], environment)
        let after = try Binary.json(updated.stdout)["settings"] as? [String: [String]] ?? [:]
        #expect(
            after["refunds.consumption_consent"] == nil && after["refunds.otherwise"] == nil
                && after["refunds.decline_at_percent"] == ["70"], "\(updated.stdout)")
    }
}
