import Foundation
import Plugins
import ReceiptCore
import ReceiptGate
import TestSupport

/// The OpenAPI document as a service with every registered plugin serves it (the core's part,
/// Deploy/openapi.yaml, with each plugin's part in place), written to a file for the independent
/// checkers that read one.
enum AssembledOpenAPI {
    static func document() throws -> String {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let core = try String(
            contentsOf: here.appendingPathComponent("../../../Deploy/openapi.yaml").standardized, encoding: .utf8)
        let environment = PluginEnvironment(variables: [:])
        return try OpenAPIDocument.assemble(
            core: core, stores: Plugins.all.stores.map(\.declaration),
            dialects: try Plugins.all.dialects.map { try $0.start(environment) })
    }

    static func file(_ label: String) throws -> String {
        let path = TestDatabase.temporaryDirectory(label).appendingPathComponent("openapi.yaml")
        try document().write(to: path, atomically: true, encoding: .utf8)
        return path.path
    }
}
