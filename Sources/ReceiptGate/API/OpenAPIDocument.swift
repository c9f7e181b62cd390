import Foundation
package import ReceiptCore

/// The OpenAPI document the service serves: the core's part (Deploy/openapi.yaml) with each
/// plugin's part placed where the core's marks it. A mark is a YAML comment, so the core's part
/// stays a valid YAML file: `# plugins: paths` (and `schemas`, `parameters`, `responses`,
/// `securitySchemes`, `headers`, `evidence properties`) is replaced by the plugins' YAML at the
/// comment's indentation; `enum: []  # plugins: store ids` becomes the served stores' ids; the
/// line `# plugins: notes on FIELD` inside a field's description becomes each served store's note
/// on that field (`OpenAPIPart.sharedFieldNotes`), one line each, named by the store.
package enum OpenAPIDocument {
    /// The document as served: the core's part found where `OperationalRoutes` looks for it
    /// (`RECEIPTGATE_OPENAPI_PATH` first), assembled; nil when the core's part is not found.
    package static func served(configuredPath: String?, stores: [StoreDeclaration], dialects: [OpenAPIPart]) -> String? {
        guard let core = OperationalRoutes.loadOpenAPIDocument(configuredPath: configuredPath) else { return nil }
        return assemble(core: String(decoding: core, as: UTF8.self), stores: stores, dialects: dialects)
    }

    package static func assemble(core: String, stores: [StoreDeclaration], dialects: [OpenAPIPart]) -> String {
        let parts = stores.map(\.openAPI) + dialects
        let storeIDs = stores.map(\.store.rawValue).joined(separator: ", ")
        var lines: [Substring] = []
        for line in core.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " }
            let indentation = String(repeating: " ", count: line.count - trimmed.count)
            if trimmed.hasPrefix("# plugins: notes on ") {
                let field = String(trimmed.dropFirst("# plugins: notes on ".count))
                for store in stores {
                    if let note = store.openAPI.sharedFieldNotes[field] { lines.append(Substring("\(indentation)\(store.displayName): \(note)")) }
                }
            } else if trimmed.hasPrefix("# plugins: ") {
                let place = String(trimmed.dropFirst("# plugins: ".count))
                for text in parts.map({ text(of: $0, for: place) }) where !text.isEmpty {
                    lines += text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? $0 : Substring(indentation + $0) }
                }
            } else if line.hasSuffix("# plugins: store ids") {
                let without = line.dropLast("# plugins: store ids".count).replacingOccurrences(of: "enum: []", with: "enum: [\(storeIDs)]")
                lines.append(Substring(without.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)))
            } else {
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n")
    }

    private static func text(of part: OpenAPIPart, for place: String) -> String {
        switch place {
        case "paths": part.paths
        case "evidence properties": part.evidenceProperties
        default: part.components[place] ?? ""
        }
    }
}
