import Foundation
import Plugins
import ReceiptCore
import ReceiptGate
import TestSupport
import Testing

/// What the registry promises an operator adding a store: the core names no store or dialect
/// (everything about one lives in its folder and its one registration line), and what is written
/// around a plugin (CLI settings, the OpenAPI document) comes from its declaration.
@Suite struct PluginRegistry {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The registered plugins' names, and the stores' brand words a comment might slip in.
    static var forbiddenNames: [String] {
        let stores = Plugins.all.stores.map(\.declaration).flatMap { [$0.store.rawValue, $0.displayName] }
        let dialects = Plugins.all.dialects.flatMap { [$0.name, $0.displayName] }
        return
            (stores + dialects + ["apple", "google", "amazon", "storekit", "alogame", "hive", "axyl", "accountlink"])
            .map { $0.lowercased() }
    }

    @Test func theCoreNamesNoStoreOrDialect() throws {
        var found: [String] = []
        for folder in ["Sources/ReceiptCore", "Sources/ReceiptGate", "Sources/ReceiptGateCLI"] {
            let directory = Self.root.appendingPathComponent(folder)
            let files = try #require(FileManager.default.enumerator(atPath: directory.path)).compactMap {
                $0 as? String
            }
            // Migrations keep the history of what the schema once held.
            for file in files where file.hasSuffix(".swift") && !file.hasSuffix("Migrations.swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let lower = line.lowercased()
                    if let name = Self.forbiddenNames.first(where: { lower.contains($0) }) {
                        found.append("\(folder)/\(file):\(number + 1): \(name)")
                    }
                }
            }
        }
        #expect(found.isEmpty, "store or dialect names in the core:\n\(found.joined(separator: "\n"))")
    }

    @Test func theCheckFindsANameSlippedIn() {
        // The rule above would catch a store's id or a dialect's name written into the core.
        let line = "    guard let registration = pipeline.stores[StoreID(rawValue: \"google_play\")] else {"
            .lowercased()
        #expect(Self.forbiddenNames.contains { line.contains($0) })
    }

    @Test func clientCreateHelpListsEachPluginsSettingsUnderItsName() async throws {
        let help = try await Binary.run(["client", "create", "--help"], [:])
        #expect(help.status == 0)
        for (plugin, settings) in Plugins.all.clientSettings where !settings.isEmpty {
            let section = try #require(help.stdout.range(of: "  \(plugin) ("), "no section for \(plugin)")
            let rest = help.stdout[section.upperBound...]
            let within = rest[..<(Self.nextSection(in: rest) ?? rest.endIndex)]
            for setting in settings {
                #expect(within.contains("--\(setting.flag) "), "--\(setting.flag) is not under \(plugin)")
            }
        }
        for store in Plugins.all.stores.map(\.declaration) {
            #expect(
                help.stdout.contains("--\(store.identifiers.flag) ID"),
                "\(store.displayName)'s identifier flag is missing")
        }
    }

    /// Where the next plugin's section (a line indented by two spaces, not four) starts.
    static func nextSection(in text: Substring) -> String.Index? {
        var index = text.startIndex
        while let newline = text[index...].firstIndex(of: "\n") {
            let next = text.index(after: newline)
            if text[next...].hasPrefix("  "), !text[next...].hasPrefix("    ") { return next }
            index = next
        }
        return nil
    }

    @Test func theServedDocumentListsTheRegisteredStoresAndEveryPluginsPart() throws {
        let document = try AssembledOpenAPI.document()
        let ids = Plugins.all.stores.map(\.declaration.store.rawValue).joined(separator: ", ")
        #expect(document.contains("enum: [\(ids)]"))
        #expect(!document.contains("# plugins:"), "every mark is replaced")
        for store in Plugins.all.stores.map(\.declaration) {
            for field in store.evidenceFields {
                #expect(
                    document.contains("\n                \(field.name):"), "\(field.name) is not in the verify body")
            }
        }
    }
}

/// The registry is refused as it is built when two stores claim one vendor code or store id: a
/// dialect naming the store by that code could not tell which is meant.
@Suite struct PluginRegistryClashes {
    static func store(_ id: String, vendorCode: String) -> StorePlugin {
        let declaration = StoreDeclaration(
            store: StoreID(rawValue: id), displayName: id,
            identifiers: AppIdentifierKind(name: "\(id)_app", flag: "\(id)-app", help: id),
            vendorCode: vendorCode, operatingSystems: [.android], evidenceShapes: [.purchaseToken])
        return StorePlugin(declaration) { _ in throw ConfigurationInvalid(variable: "UNUSED", problem: "never started")
        }
    }

    @Test func aSecondStoreWithAVendorCodeInUseIsRefused() {
        #expect {
            // Codes are compared as declared, in capitals: "acme" and "ACME" are one code.
            _ = try PluginList(
                stores: [Self.store("acme_store", vendorCode: "ACME"), Self.store("acme_two", vendorCode: "acme")],
                dialects: [])
        } throws: { error in
            (error as? PluginListInvalid)?.clashes == ["vendor code ACME"]
        }
    }

    @Test func aSecondStoreWithAStoreIDInUseIsRefused() {
        #expect {
            _ = try PluginList(
                stores: [Self.store("acme_store", vendorCode: "ACME"), Self.store("acme_store", vendorCode: "OTHER")],
                dialects: [])
        } throws: { error in
            (error as? PluginListInvalid)?.clashes == ["store id acme_store"]
        }
    }

    @Test func distinctStoresAndTheShippedRegistryAreAccepted() throws {
        let list = try PluginList(
            stores: [Self.store("acme_store", vendorCode: "ACME"), Self.store("other_store", vendorCode: "OTHER")],
            dialects: [])
        #expect(list.stores.count == 2)
        _ = try PluginList(stores: Plugins.all.stores, dialects: Plugins.all.dialects)
    }
}
