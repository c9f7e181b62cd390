import Foundation
import Plugins
import ReceiptCore
import Testing

/// Every store registered in the binary is where users look for it, so a store added later
/// cannot be missing from the pages that list stores: the pages below, each checked for every
/// store, and any other page that names most of the stores (a list written by hand that nobody
/// checks would go stale). Its note on the native body's `receipt` is in the served OpenAPI document.
@Suite struct RegisteredStoresInDocs {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..")
        .standardized

    static func page(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    static let stores = Plugins.all.stores.map(\.declaration)

    /// The pages that list the stores on purpose (the product page, the store,
    /// configuration and API references).
    static let listingPages = ["README.md", "docs/stores.md", "docs/configuration.md", "docs/api.md"]

    /// The registered stores a text names, by display name or by vendor code in backquotes.
    static func storesNamed(in text: String) -> [StoreDeclaration] {
        stores.filter { text.contains($0.displayName) || text.contains("`\($0.vendorCode)`") }
    }

    @Test(arguments: listingPages) func aPageThatListsStoresNamesEveryOne(_ path: String) throws {
        let text = try Self.page(path)
        for store in Self.stores {
            #expect(text.contains(store.displayName), "\(path) does not name \(store.displayName)")
        }
    }

    @Test func noOtherPageListsStoresByHand() throws {
        let docs = Self.root.appendingPathComponent("docs")
        let files =
            try #require(FileManager.default.enumerator(atPath: docs.path)).compactMap { $0 as? String }
            .filter { $0.hasSuffix(".md") }.map { "docs/" + $0 } + ["Providers/README.md"]
        for path in files where !Self.listingPages.contains(path) {
            let named = Self.storesNamed(in: try Self.page(path))
            // Naming most of the stores is a list; it must then name them all, and be one of the
            // pages above so this test holds it to every store.
            #expect(
                named.count * 2 <= Self.stores.count || named.count == Self.stores.count,
                "\(path) names \(named.map(\.displayName)) of the registered stores: a list by hand, missing some")
        }
    }

    @Test func theListCheckFindsAPageMissingAStore() {
        let partial = Self.stores.dropLast().map(\.displayName).joined(separator: ", ")
        #expect(Self.stores.count < 3 || Self.storesNamed(in: partial).count * 2 > Self.stores.count)
    }

    @Test func storesMdHasASectionForEachStore() throws {
        let headings = try Self.page("docs/stores.md").split(separator: "\n").filter { $0.hasPrefix("## ") }.map {
            String($0.dropFirst(3))
        }
        for store in Self.stores {
            #expect(headings.contains(store.displayName), "docs/stores.md has no section \"## \(store.displayName)\"")
        }
    }

    @Test func configurationMdHasEachStoresClientFlags() throws {
        let configuration = try Self.page("docs/configuration.md")
        for store in Self.stores {
            for flag in [store.identifiers.flag] + store.settings.map(\.flag) {
                #expect(
                    configuration.contains("`--\(flag) "),
                    "docs/configuration.md does not list --\(flag) (\(store.displayName))")
            }
        }
    }

    @Test func apiMdNamesEachStoreAndItsNotificationRoute() throws {
        let api = try Self.page("docs/api.md")
        for store in Self.stores {
            #expect(api.contains("`\(store.store.rawValue)`"), "docs/api.md does not name \(store.store.rawValue)")
            let route = "/v1/notifications/" + store.store.rawValue.replacingOccurrences(of: "_", with: "-")
            let served = try AssembledOpenAPI.document().contains("\n  \(route):")
            #expect(!served || api.contains(route), "docs/api.md does not list \(route)")
            for field in store.evidenceFields {
                #expect(
                    api.contains("`\(field.name)`"),
                    "docs/api.md does not list \(store.displayName)'s evidence field \(field.name)")
            }
        }
    }

    @Test func theOpenAPIDocumentSaysWhatEachStoreTakesAsReceipt() throws {
        let document = try AssembledOpenAPI.document()
        for store in Self.stores {
            #expect(
                document.contains("\n                    \(store.displayName): "),
                "no note of \(store.displayName) on the verify body's receipt")
        }
        #expect(
            document.contains("Huawei AppGallery: required with a bare purchase token"), "Huawei's use of product_id")
    }
}
