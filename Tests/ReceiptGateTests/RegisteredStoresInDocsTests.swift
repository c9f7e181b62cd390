import Foundation
import Plugins
import ReceiptCore
import Testing

/// Every store registered in the binary is where users look for it, so a store added later
/// cannot be missing from the pages that list stores: its section in docs/stores.md, its id and
/// notification route in docs/api.md, and its note on the native body's `receipt` in the served
/// OpenAPI document.
@Suite struct RegisteredStoresInDocs {
    static func page(_ name: String) throws -> String {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        return try String(contentsOf: here.appendingPathComponent("../../docs/\(name)").standardized, encoding: .utf8)
    }

    static let stores = Plugins.all.stores.map(\.declaration)

    @Test func storesMdHasASectionForEachStore() throws {
        let headings = try Self.page("stores.md").split(separator: "\n").filter { $0.hasPrefix("## ") }.map { String($0.dropFirst(3)) }
        for store in Self.stores {
            #expect(headings.contains(store.displayName), "docs/stores.md has no section \"## \(store.displayName)\"")
        }
    }

    @Test func apiMdNamesEachStoreAndItsNotificationRoute() throws {
        let api = try Self.page("api.md")
        for store in Self.stores {
            #expect(api.contains("`\(store.store.rawValue)`"), "docs/api.md does not name \(store.store.rawValue)")
            let route = "/v1/notifications/" + store.store.rawValue.replacingOccurrences(of: "_", with: "-")
            let served = try AssembledOpenAPI.document().contains("\n  \(route):")
            #expect(!served || api.contains(route), "docs/api.md does not list \(route)")
        }
    }

    @Test func theOpenAPIDocumentSaysWhatEachStoreTakesAsReceipt() throws {
        let document = try AssembledOpenAPI.document()
        for store in Self.stores {
            #expect(document.contains("\n                    \(store.displayName): "), "no note of \(store.displayName) on the verify body's receipt")
        }
        #expect(document.contains("Huawei AppGallery: required with a bare purchase token"), "Huawei's use of product_id")
    }
}
