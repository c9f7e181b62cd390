import Foundation
package import ReceiptCore

/// The OpenAPI document the service serves: the core's part (Deploy/openapi.yaml) with each
/// plugin's part placed where the core's marks it. A mark is a YAML comment, so the core's part
/// stays a valid YAML file: `# plugins: paths` (and `schemas`, `parameters`, `responses`,
/// `securitySchemes`, `headers`, `evidence properties`) is replaced by the plugins' YAML at the
/// comment's indentation; `enum: []  # plugins: store ids` becomes the served stores' ids; the
/// line `# plugins: notes on FIELD` inside a field's description becomes each served store's note
/// on that field (`OpenAPIPart.sharedFieldNotes`), one line each, named by the store. A dialect's
/// part is written from the served stores' facts (`DialectProvider.openAPI(stores:)`), so the
/// stores a dialect reaches are the ones its schemas name.
package enum OpenAPIDocument {
    /// What a plugin gave that has no place in the core's part: it would be lost without a word,
    /// so the document is not made (a plugin's mistake, found by the first test that builds it).
    package struct Unplaced: Error, Sendable, CustomStringConvertible {
        /// `plugin: what` for each piece.
        package let pieces: [String]
        package var description: String {
            "the OpenAPI document has no place for: \(pieces.joined(separator: "; ")) (add a `# plugins: ...` mark to Deploy/openapi.yaml, or drop the piece)"
        }
    }

    /// The document as served: the core's part found where `OperationalRoutes` looks for it
    /// (`RECEIPTGATE_OPENAPI_PATH` first), assembled; nil when the core's part is not found.
    package static func served(
        configuredPath: String?, stores: [StoreDeclaration], dialects: [any DialectProvider]
    ) throws(Unplaced) -> String? {
        guard let core = OperationalRoutes.loadOpenAPIDocument(configuredPath: configuredPath) else { return nil }
        return try assemble(core: String(decoding: core, as: UTF8.self), stores: stores, dialects: dialects)
    }

    package static func assemble(
        core: String, stores: [StoreDeclaration], dialects: [any DialectProvider]
    ) throws(Unplaced) -> String {
        let dialectParts = dialects.map { (name: $0.name, part: $0.openAPI(stores: stores)) }
        let parts = stores.map { (name: $0.store.rawValue, part: $0.openAPI) } + dialectParts
        let storeIDs = stores.map(\.store.rawValue).joined(separator: ", ")
        var lines: [Substring] = []
        var placed: Set<String> = [], notedFields: Set<String> = []
        for line in core.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.drop { $0 == " " }
            let indentation = String(repeating: " ", count: line.count - trimmed.count)
            if trimmed.hasPrefix("# plugins: notes on ") {
                let field = String(trimmed.dropFirst("# plugins: notes on ".count))
                notedFields.insert(field)
                for store in stores {
                    if let note = store.openAPI.sharedFieldNotes[field] {
                        lines.append(Substring("\(indentation)\(store.displayName): \(note)"))
                    }
                }
            } else if trimmed.hasPrefix("# plugins: ") {
                let place = String(trimmed.dropFirst("# plugins: ".count))
                placed.insert(place)
                for text in parts.map({ text(of: $0.part, for: place) }) where !text.isEmpty {
                    lines += text.split(separator: "\n", omittingEmptySubsequences: false).map {
                        $0.isEmpty ? $0 : Substring(indentation + $0)
                    }
                }
            } else if line.hasSuffix("# plugins: store ids") {
                let without = line.dropLast("# plugins: store ids".count).replacingOccurrences(
                    of: "enum: []", with: "enum: [\(storeIDs)]")
                lines.append(
                    Substring(without.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)))
            } else {
                lines.append(line)
            }
        }
        let unplaced =
            parts.flatMap { unplacedPieces(of: $0.part, plugin: $0.name, placed: placed) }
            + stores.flatMap { store in
                store.openAPI.sharedFieldNotes.keys.sorted().filter { !notedFields.contains($0) }.map {
                    "\(store.store.rawValue): a note on \($0)"
                }
            }
            // Notes on the native body's fields are a store's; a dialect's would be lost.
            + dialectParts.flatMap { dialect in
                dialect.part.sharedFieldNotes.keys.sorted().map { "\(dialect.name): a note on \($0)" }
            }
        guard unplaced.isEmpty else { throw Unplaced(pieces: unplaced) }
        return lines.joined(separator: "\n")
    }

    private static func text(of part: OpenAPIPart, for place: String) -> String {
        switch place {
        case "paths": part.paths
        case "evidence properties": part.evidenceProperties
        default: part.components[place] ?? ""
        }
    }

    /// The part's non-empty pieces whose place the core's part does not mark.
    private static func unplacedPieces(of part: OpenAPIPart, plugin: String, placed: Set<String>) -> [String] {
        let pieces =
            [("paths", part.paths), ("evidence properties", part.evidenceProperties)]
            + part.components.sorted { $0.key < $1.key }
        return pieces.filter { !$0.1.isEmpty && !placed.contains($0.0) }.map { "\(plugin): \($0.0)" }
    }
}
