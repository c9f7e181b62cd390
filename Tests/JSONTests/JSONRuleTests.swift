import Foundation
import Testing

/// One JSON rule for the store plugins: `JSONReader` (or `JSONValue`, built by it) on the request
/// paths, Codable elsewhere, and no JSONSerialization under `Providers/`: its `Any` trees read
/// types loosely in a different way in every place that casts them.
@Suite struct JSONRule {
    static let forbidden = "JSONSerialization"

    /// The repository root, from this file's place in it (`Tests/JSONTests/`).
    static var repositoryRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// The `.swift` files under `directory` that mention `forbidden`, relative to the root.
    static func offenders(under directory: URL) throws -> [String] {
        let root = repositoryRoot.standardizedFileURL.path + "/"
        let files = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
        var found: [String] = []
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            if text.contains(forbidden) {
                found.append(file.standardizedFileURL.path.replacingOccurrences(of: root, with: ""))
            }
        }
        return found.sorted()
    }

    @Test func noProviderUsesJSONSerialization() throws {
        let providers = Self.repositoryRoot.appendingPathComponent("Providers")
        let swiftFiles = try #require(FileManager.default.enumerator(at: providers, includingPropertiesForKeys: nil))
            .compactMap { ($0 as? URL)?.pathExtension == "swift" ? $0 : nil }
        #expect(swiftFiles.count > 50, "the walk found the plugins' sources")
        let offenders = try Self.offenders(under: providers)
        #expect(offenders.isEmpty, "JSONSerialization in \(offenders.joined(separator: ", "))")
    }

    @Test func theWalkFindsAFileThatUsesIt() throws {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("json-rule-\(UUID().uuidString)/Nested")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory.deletingLastPathComponent()) }
        try Data("let x = 1\n".utf8).write(to: directory.appendingPathComponent("Clean.swift"))
        try Data("_ = try JSONSerialization.jsonObject(with: data)\n".utf8)
            .write(to: directory.appendingPathComponent("Loose.swift"))
        try Data("JSONSerialization in a note\n".utf8).write(to: directory.appendingPathComponent("README.md"))
        let offenders = try Self.offenders(under: directory.deletingLastPathComponent())
        #expect(offenders.count == 1)
        #expect(offenders.first?.hasSuffix("Nested/Loose.swift") == true)
    }
}
