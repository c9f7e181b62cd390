import Foundation
import Plugins
import ReceiptCore
import ReceiptGate
import Testing

/// What a plugin gives the served document is either placed or refused: a note on a field the
/// core's part has no mark for, or a section it has no place for, stops the document from being
/// made instead of vanishing from it.
@Suite struct OpenAPIDocumentAssembly {
    static let core = """
        paths:
          /v1/verify:
            post:
              description: |
                The evidence:
                # plugins: notes on receipt
          # plugins: paths
        components:
          schemas:
            # plugins: schemas
        """

    static func store(notes: [String: String] = [:], components: [String: String] = [:]) -> StoreDeclaration {
        StoreDeclaration(
            store: StoreID(rawValue: "acme_store"), displayName: "Acme Store",
            identifiers: AppIdentifierKind(name: "acme_package", flag: "acme-package", help: "Acme package"),
            vendorCode: "ACME", operatingSystems: [.android], evidenceShapes: [.purchaseToken],
            openAPI: OpenAPIPart(components: components, sharedFieldNotes: notes))
    }

    @Test func aNoteOnAMarkedFieldIsPlacedUnderTheStoresName() throws {
        let document = try OpenAPIDocument.assemble(
            core: Self.core, stores: [Self.store(notes: ["receipt": "an Acme token."])], dialects: [])
        #expect(document.contains("\n        Acme Store: an Acme token.\n"))
    }

    @Test func aNoteOnAFieldWithNoMarkIsRefusedNamingIt() {
        #expect {
            try OpenAPIDocument.assemble(
                core: Self.core, stores: [Self.store(notes: ["receipt": "a token.", "product_id": "required."])],
                dialects: [])
        } throws: { error in
            (error as? OpenAPIDocument.Unplaced)?.pieces == ["acme_store: a note on product_id"]
        }
    }

    @Test func aSectionWithNoMarkIsRefusedNamingIt() {
        #expect {
            try OpenAPIDocument.assemble(
                core: Self.core, stores: [Self.store(components: ["schemas": "A: {}", "examples": "B: {}"])],
                dialects: [])
        } throws: { error in
            (error as? OpenAPIDocument.Unplaced)?.pieces == ["acme_store: examples"]
        }
    }

    @Test func theShippedPluginsPartsAllHaveAPlace() throws {
        // Deploy/openapi.yaml marks every field and section the registered plugins give.
        let document = try AssembledOpenAPI.document()
        #expect(document.hasPrefix("openapi: 3"))
    }
}
