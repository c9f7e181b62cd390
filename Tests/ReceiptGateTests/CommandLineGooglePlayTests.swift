import Foundation
import OpenSSLCrypto
import Postgres
import TestSupport
import Testing

/// `client create/update` with the Google Play flags, through the built binary: the service-account
/// key stored sealed and never printed back, the other flags shown as plain settings, bad values
/// refused with exit 2.
@Suite struct ClientGooglePlayFlags {
    static func serviceAccountFile() throws -> (path: String, json: String, pem: String) {
        let pem = try TestKeys.rsa(.unrelated).pemRepresentation()
        let object: [String: String] = [
            "type": "service_account", "project_id": "cli-test", "private_key_id": "abc123",
            "private_key": pem, "client_email": "rg@cli-test.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        let json = String(
            decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
        let path = TestDatabase.temporaryDirectory("cli-google").appendingPathComponent("key.json").path
        try FileManager.default.createDirectory(
            atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(json.utf8).write(to: URL(fileURLWithPath: path))
        return (path, json, pem)
    }

    @Test func theGoogleFlagsAreStoredTheKeySealedAndNeverPrinted() async throws {
        let environment = try await Binary.databaseEnvironment()
        let key = try Self.serviceAccountFile()
        let license = Base64.encode(try TestKeys.rsa(.playLicense).publicKey.subjectPublicKeyInfo())
        // A fragment of the private key that any plain copy would contain.
        let keyFragment = String(key.pem.split(separator: "\n")[1])

        let created = try await Binary.run(
            [
                "client", "create", "--name", "Android Game", "--package-name", "com.example.game",
                "--google-service-account-key", key.path, "--google-license-key", license,
                "--google-acknowledge", "off", "--google-consume", "on",
            ], environment)
        #expect(created.status == 0, "stderr: \(created.stderr)")
        let clientID = try #require(try Binary.json(created.stdout)["client_id"] as? String)
        for output in [created.stdout, created.stderr] {
            #expect(!output.contains(keyFragment) && !output.contains("private_key"), "the key must never be printed")
        }

        let shown = try await Binary.run(["client", "show", clientID], environment)
        #expect(shown.status == 0)
        #expect(
            !shown.stdout.contains(keyFragment) && !shown.stdout.contains("private_key")
                && !shown.stdout.contains("service_account_key"))
        let object = try Binary.json(shown.stdout)
        #expect(object["has_secret_settings"] as? Bool == true)
        let settings = try #require(object["settings"] as? [String: Any], "\(shown.stdout)")
        #expect(settings["google_play.license_key"] as? [String] == [license])
        #expect(settings["google_play.acknowledge"] as? [String] == ["off"])
        #expect(settings["google_play.consume"] as? [String] == ["on"])

        // In the database the key exists only sealed.
        let pool = PostgresPool(.init(connectionString: try #require(environment["DATABASE_URL"]), size: 1))
        defer { pool.shutdown() }
        let dump = try await pool.query("SELECT string_agg(c::text, ' ') AS dump FROM clients c")[0].decode(
            "dump", as: String.self)
        #expect(!dump.contains(keyFragment) && !dump.contains("cli-test.iam"))
        let sealed = try #require(
            try await pool.query("SELECT sealed_settings FROM clients")[0].decode("sealed_settings", as: Data?.self))
        let bytes = String(decoding: sealed, as: UTF8.self)
        #expect(sealed.count > key.json.utf8.count, "the key is stored")
        #expect(
            !bytes.contains("private_key") && !bytes.contains("cli-test.iam") && !bytes.contains("BEGIN"),
            "stored sealed, not as text")

        // Update: flags changed, the key removed with an empty value.
        let updated = try await Binary.run(
            [
                "client", "update", clientID, "--google-acknowledge", "on", "--google-consume", "off",
                "--google-service-account-key", "",
            ], environment)
        #expect(updated.status == 0, "stderr: \(updated.stderr)")
        let after = try Binary.json(updated.stdout)
        #expect((after["settings"] as? [String: Any])?["google_play.acknowledge"] as? [String] == ["on"])
        #expect((after["settings"] as? [String: Any])?["google_play.consume"] as? [String] == ["off"])
        #expect(after["has_secret_settings"] as? Bool == false)
        // And set again on update, still never printed.
        let resealed = try await Binary.run(
            ["client", "update", clientID, "--google-service-account-key", key.path], environment)
        #expect(resealed.status == 0)
        #expect(!resealed.stdout.contains(keyFragment))
        #expect(try Binary.json(resealed.stdout)["has_secret_settings"] as? Bool == true)
    }

    @Test(arguments: [
        ["--google-acknowledge", "maybe"], ["--google-consume", "yes"], ["--google-license-key", "not base64!"],
        ["--google-license-key", "QUJDRA=="], ["--google-service-account-key", "/nonexistent/key.json"],
        ["--google-service-account-key", "/etc/hostname"],
    ])
    func badGoogleValuesExitTwo(_ flag: [String]) async throws {
        let environment = try await Binary.databaseEnvironment()
        let result = try await Binary.run(
            ["client", "create", "--name", "x", "--package-name", "com.example.game"] + flag, environment)
        #expect(result.status == 2, "stderr: \(result.stderr)")
        #expect(result.stderr.contains(flag[0]), "\(result.stderr)")
        #expect(result.stdout.isEmpty)
    }
}
