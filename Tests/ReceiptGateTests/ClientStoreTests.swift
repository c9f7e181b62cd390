import AmazonAppstore
import AppStore
import Foundation
import GooglePlay
import OpenSSLCrypto
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

private func makeStore() async throws -> (ClientRepository, PostgresPool) {
    let pool = PostgresPool(.init(connectionString: try await TestDatabase.makeDatabase(prefix: "clients"), size: 2))
    try await Migrator.migrate(pool, migrations: Schema.migrations)
    return (ClientRepository(pool: pool, secrets: SecretBox(masterKey: SecureRandom.bytes(32))), pool)
}

@Suite struct ClientStorage {
    @Test func theSecretIsStoredOnlyEncrypted() async throws {
        let (store, pool) = try await makeStore()
        defer { pool.shutdown() }
        var settings = ClientSettings()
        settings.name = "Demo"
        settings.gameID = 42
        settings.appIdentifiers[AppStoreProvider.bundleIDKind.name] = ["com.example.game"]
        let created = try await store.create(settings)
        #expect(created.secret.count >= 40)
        #expect(created.client.environments == [.production])

        // No column of the row, in any text form, contains the plaintext.
        let dump = try await pool.query(
            "SELECT clients::text AS row, encode(secret_ciphertext, 'escape') AS raw FROM clients")
        for row in dump {
            #expect(try !row.decode("row", as: String.self).contains(created.secret))
            #expect(try !row.decode("raw", as: String.self).contains(created.secret))
        }
        let fetched = try #require(try await store.secret(for: created.client.clientID))
        #expect(fetched.secret == created.secret)
    }

    /// One Android package can be one game's Google Play app and another's Amazon app: each
    /// store finds the client that registered it under that store's kind of identifier.
    @Test func anAppIsFoundUnderItsStoresKindOfIdentifier() async throws {
        let (store, pool) = try await makeStore()
        defer { pool.shutdown() }
        var google = ClientSettings(), amazon = ClientSettings()
        google.name = "Google game"
        google.appIdentifiers[GooglePlayProvider.packageNameKind.name] = ["com.example.shared"]
        amazon.name = "Amazon game"
        amazon.appIdentifiers[AmazonAppstoreProvider.packageNameKind.name] = ["com.example.shared"]
        let first = try await store.create(google).client, second = try await store.create(amazon).client
        #expect(
            try await store.find(appIdentifier: "com.example.shared", kind: AmazonAppstoreProvider.packageNameKind)?
                .clientID == second.clientID)
        #expect(
            try await store.find(appIdentifier: "com.example.shared", kind: GooglePlayProvider.packageNameKind)?
                .clientID == first.clientID)
        #expect(try await store.find(appIdentifier: "com.example.shared", kind: AppStoreProvider.bundleIDKind) == nil)
        let registered = try await store.registeredApps(AmazonAppstoreProvider.packageNameKind)
        #expect(registered.appIdentifiers == ["com.example.shared"])
        #expect(try await store.registeredApps(AppStoreProvider.bundleIDKind).appIdentifiers.isEmpty)
    }

    @Test func pluginSettingsMergeAndTheirSecretsStaySealed() async throws {
        let (store, pool) = try await makeStore()
        defer { pool.shutdown() }
        var settings = ClientSettings()
        settings.name = "Plugins"
        settings.settings = ["hiveaxyl.app_ids": ["app-1", "app-2"], "google.acknowledge": ["on"]]
        settings.sealedSettings = ["google_play.service_account_key": "-----PRIVATE KEY-----abc", "other.key": "x"]
        let created = try await store.create(settings).client
        #expect(created.info.settings["hiveaxyl.app_ids"] == ["app-1", "app-2"])
        #expect(created.hasSealedSettings)

        var change = ClientSettings()
        change.settings = ["google.acknowledge": nil, "google.consume": ["on"]]
        change.sealedSettings = ["other.key": nil]
        let updated = try await store.update(created.clientID, change)
        #expect(updated.settings == ["hiveaxyl.app_ids": ["app-1", "app-2"], "google.consume": ["on"]])
        #expect(
            try await store.sealedSettings(of: created.clientID, prefix: "google_play.") == [
                "google_play.service_account_key": "-----PRIVATE KEY-----abc"
            ])
        #expect(
            try await store.sealedSettings(of: created.clientID).keys.sorted() == ["google_play.service_account_key"])
        let dump = try await pool.query(
            "SELECT clients::text AS row, encode(sealed_settings, 'escape') AS raw FROM clients")
        #expect(try !dump[0].decode("row", as: String.self).contains("PRIVATE KEY"))
        #expect(try !dump[0].decode("raw", as: String.self).contains("PRIVATE KEY"))
    }

    @Test func rotationInvalidatesTheOldSecret() async throws {
        let (store, pool) = try await makeStore()
        defer { pool.shutdown() }
        var settings = ClientSettings()
        settings.name = "Rotating"
        let created = try await store.create(settings)
        let rotated = try await store.rotateSecret(created.client.clientID)
        #expect(rotated != created.secret)
        #expect(try await store.secret(for: created.client.clientID)?.secret == rotated)
        await #expect(throws: ClientStoreError.self) { try await store.rotateSecret("rgc_missing") }
    }

    @Test func updateChangesOnlyWhatIsGivenAndCanClear() async throws {
        let (store, pool) = try await makeStore()
        defer { pool.shutdown() }
        var settings = ClientSettings()
        settings.name = "Game"
        settings.gameID = 7
        settings.refundCallbackURL = "https://game.example/refund"
        let created = try await store.create(settings).client

        var change = ClientSettings()
        change.environments = [.production, .sandbox]
        change.refundCallbackURL = .some(nil)
        let updated = try await store.update(created.clientID, change)
        #expect(updated.name == "Game")
        #expect(updated.gameID == 7)
        #expect(updated.allowsSandbox)
        #expect(updated.refundCallbackURL == nil)

        var clearGame = ClientSettings()
        clearGame.gameID = .some(nil)
        #expect(try await store.update(created.clientID, clearGame).gameID == nil)
    }

    @Test func aDisabledClientHasNoUsableSecret() async throws {
        let (store, pool) = try await makeStore()
        defer { pool.shutdown() }
        var settings = ClientSettings()
        settings.name = "Gone"
        let created = try await store.create(settings)
        #expect(try await store.disable(created.client.clientID).disabled)
        #expect(try await store.secret(for: created.client.clientID) == nil)
        #expect(try await store.secret(for: "rgc_unknown") == nil)
        #expect(try await store.list().map(\.clientID) == [created.client.clientID])
    }
}
