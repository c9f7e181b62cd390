import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

@Suite struct Configuration {
    @Test func defaultsNeedNothingConfigured() throws {
        let configuration = try ServiceConfiguration.fromEnvironment([:])
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.port == 8080)
        #expect(configuration.databaseURL == nil)
        #expect(configuration.dataDirectory.lastPathComponent == ".receiptgate")
        #expect(configuration.masterKey == nil)
        #expect(configuration.logLevel == .info)
        #expect(configuration.clientCacheSeconds == 5)
        #expect(configuration.databaseReadURL == nil, "reads go to the primary unless a standby is named")
        #expect(configuration.readMaxLagMilliseconds == 1000, "a standby more than a second behind is skipped")
        #expect(configuration.entitlementSweepSeconds == 30)
    }

    @Test func valuesAreRead() throws {
        let key = Data(repeating: 7, count: 32)
        let configuration = try ServiceConfiguration.fromEnvironment([
            "RECEIPTGATE_HOST": "0.0.0.0", "RECEIPTGATE_PORT": "9090", "DATABASE_URL": "postgresql://db/rg",
            "RECEIPTGATE_DATA_DIR": "/var/lib/rg", "RECEIPTGATE_MASTER_KEY": key.base64EncodedString(),
            "RECEIPTGATE_LOG_LEVEL": "DEBUG", "RECEIPTGATE_DB_POOL_SIZE": "3", "RECEIPTGATE_CLIENT_CACHE_SECONDS": "0",
            "DATABASE_READ_URL": "postgresql://standby/rg", "RECEIPTGATE_READ_MAX_LAG_MS": "250",
            "RECEIPTGATE_ENTITLEMENT_SWEEP_INTERVAL": "5",
        ])
        #expect(configuration.host == "0.0.0.0")
        #expect(configuration.port == 9090)
        #expect(configuration.databaseURL == "postgresql://db/rg")
        #expect(configuration.dataDirectory.path == "/var/lib/rg")
        #expect(configuration.masterKey == key)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.databasePoolSize == 3)
        #expect(configuration.clientCacheSeconds == 0)
        #expect(configuration.databaseReadURL == "postgresql://standby/rg")
        #expect(configuration.readMaxLagMilliseconds == 250)
        #expect(configuration.entitlementSweepSeconds == 5)
        // 0 is a bound too: only a standby with nothing left to replay answers.
        #expect(
            try ServiceConfiguration.fromEnvironment(["RECEIPTGATE_READ_MAX_LAG_MS": "0"]).readMaxLagMilliseconds == 0)
    }

    @Test(arguments: [
        ("RECEIPTGATE_PORT", "eighty"), ("RECEIPTGATE_PORT", "70000"), ("RECEIPTGATE_HOST", "my host"),
        ("RECEIPTGATE_MASTER_KEY", "c2hvcnQ="), ("RECEIPTGATE_MASTER_KEY", "not base64!"),
        ("RECEIPTGATE_LOG_LEVEL", "loud"), ("RECEIPTGATE_DB_POOL_SIZE", "0"), ("RECEIPTGATE_MAX_BODY_BYTES", "12"),
        ("RECEIPTGATE_CLIENT_CACHE_SECONDS", "-1"), ("RECEIPTGATE_CLIENT_CACHE_SECONDS", "301"),
        ("RECEIPTGATE_READ_MAX_LAG_MS", "1s"), ("RECEIPTGATE_READ_MAX_LAG_MS", "-1"),
        ("RECEIPTGATE_READ_MAX_LAG_MS", "3600001"),
        ("RECEIPTGATE_READ_MAX_LAG_MS", "2.5"), ("RECEIPTGATE_ENTITLEMENT_SWEEP_INTERVAL", "0"),
    ])
    func badValuesNameTheVariable(variable: String, value: String) {
        do {
            _ = try ServiceConfiguration.fromEnvironment([variable: value])
            Issue.record("\(variable)=\(value) was accepted")
        } catch let invalid as ServiceConfiguration.Invalid {
            #expect(invalid.variable == variable)
            #expect(invalid.description.hasPrefix(variable))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}

@Suite struct MasterKey {
    @Test func generatedOnceWithOwnerOnlyPermissionsThenReused() throws {
        let directory = TestDatabase.temporaryDirectory("masterkey")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try SecretBox.loadMasterKey(configured: nil, dataDirectory: directory)
        #expect(first.key.count == 32)
        #expect(first.generatedAt != nil)
        let attributes = try FileManager.default.attributesOfItem(
            atPath: directory.appendingPathComponent("master.key").path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let second = try SecretBox.loadMasterKey(configured: nil, dataDirectory: directory)
        #expect(second.key == first.key)
        #expect(second.generatedAt == nil)
        // A configured key wins over the file.
        let configured = Data(repeating: 1, count: 32)
        #expect(try SecretBox.loadMasterKey(configured: configured, dataDirectory: directory).key == configured)
    }

    @Test func aCorruptKeyFileStopsStartUp() throws {
        let directory = TestDatabase.temporaryDirectory("masterkey-bad")
        defer { try? FileManager.default.removeItem(at: directory) }
        try "short".write(to: directory.appendingPathComponent("master.key"), atomically: true, encoding: .utf8)
        #expect(throws: ServiceConfiguration.Invalid.self) {
            try SecretBox.loadMasterKey(configured: nil, dataDirectory: directory)
        }
    }

    @Test func secretBoxesAreBoundToTheirOwnerAndKey() throws {
        let box = SecretBox(masterKey: Data(repeating: 3, count: 32))
        let sealed = try box.seal("rgs_secret", owner: "client-a")
        #expect(try box.open(sealed, owner: "client-a") == "rgs_secret")
        // Copied onto another client's row, or opened under another master key: refused as altered, never opened.
        let refused = CryptoError(.authenticationFailed, "")
        #expect(throws: refused) { try box.open(sealed, owner: "client-b") }
        #expect(throws: refused) {
            try SecretBox(masterKey: Data(repeating: 4, count: 32)).open(sealed, owner: "client-a")
        }
    }
}
