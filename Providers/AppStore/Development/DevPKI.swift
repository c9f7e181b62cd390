import Foundation
import OpenSSLCrypto

/// A development PKI shaped like Apple's App Store signing chain: a self-signed root, an
/// intermediate with the marker extension Apple's WWDR intermediate carries, and a leaf with
/// the App Store signing marker. It lives under `<data dir>/dev-pki/` so every `dev purchase`
/// signs with the same chain, and a service started with
/// `RECEIPTGATE_APPLE_ROOT_CERTS=<data dir>/dev-pki/root.pem` accepts what it signs. Nothing it
/// signs chains to Apple's root, so a service trusting Apple refuses it.
struct DevPKI {
    let root: Certificate
    let intermediate: Certificate
    let leaf: Certificate
    let leafKey: PrivateKey

    /// The `x5c` header value, leaf first, as Apple sends it.
    var x5c: [String] { [leaf, intermediate, root].map { $0.derEncoded.base64EncodedString() } }

    static let rootFile = "root.pem", chainFile = "chain.pem", leafKeyFile = "leaf-key.pem"

    /// Reads the PKI under `directory`, or creates it there; `created` says which.
    static func loadOrCreate(in directory: URL) throws -> (pki: DevPKI, created: Bool) {
        if let existing = try load(from: directory) { return (existing, false) }
        let pki = try DevPKI()
        // Written aside, then renamed into place: two first calls at once cannot leave a
        // half-written folder, and the one that loses the rename uses the winner's PKI.
        let parent = directory.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: parent, withIntermediateDirectories: true)
        let staging = parent.appendingPathComponent(".dev-pki-\(UUID().uuidString)")
        try FileManager.default.createDirectory(
            at: staging, withIntermediateDirectories: false,
            attributes: [.posixPermissions: 0o700])
        defer { try? FileManager.default.removeItem(at: staging) }
        try write(pki.root.pemEncoded, to: staging.appendingPathComponent(rootFile), mode: 0o644)
        try write(
            [pki.leaf, pki.intermediate, pki.root].map(\.pemEncoded).joined(),
            to: staging.appendingPathComponent(chainFile), mode: 0o644)
        try write(try pki.leafKey.pemRepresentation(), to: staging.appendingPathComponent(leafKeyFile), mode: 0o600)
        guard rename(staging.path, directory.path) == 0 else {
            guard let winner = try load(from: directory) else { throw DevPKIError("cannot create \(directory.path)") }
            return (winner, false)
        }
        return (pki, true)
    }

    /// A fresh chain valid from a day ago for five years.
    private init() throws {
        let chain = try AppleShapedChain(
            names: (
                "ReceiptGate Development Root (not Apple)", "ReceiptGate Development Intermediate",
                "ReceiptGate Development App Store Signing"
            ),
            until: Date(timeIntervalSinceNow: 86_400 * 365 * 5))
        self.init(root: chain.root, intermediate: chain.intermediate, leaf: chain.leaf, leafKey: chain.leafKey)
    }

    private init(root: Certificate, intermediate: Certificate, leaf: Certificate, leafKey: PrivateKey) {
        self.root = root
        self.intermediate = intermediate
        self.leaf = leaf
        self.leafKey = leafKey
    }

    private static func load(from directory: URL) throws -> DevPKI? {
        let chainPath = directory.appendingPathComponent(chainFile).path
        guard let chainBytes = FileManager.default.contents(atPath: chainPath) else { return nil }
        let chain = try Certificate.parseFile(contents: chainBytes)
        guard chain.count == 3,
            let keyBytes = FileManager.default.contents(atPath: directory.appendingPathComponent(leafKeyFile).path)
        else {
            throw DevPKIError("\(directory.path) is incomplete; remove it to start a new development PKI")
        }
        return DevPKI(
            root: chain[2], intermediate: chain[1], leaf: chain[0],
            leafKey: try PrivateKey(pem: String(decoding: keyBytes, as: UTF8.self)))
    }

    /// Created with its mode from the start: a key file is never readable by others, even briefly.
    private static func write(_ text: String, to file: URL, mode: mode_t) throws {
        let descriptor = Foundation.open(file.path, O_WRONLY | O_CREAT | O_EXCL, mode)
        guard descriptor >= 0 else {
            throw DevPKIError("cannot create \(file.path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else { throw DevPKIError("cannot write \(file.path)") }
    }
}

/// The development PKI could not be read or written (exit code 1, one line).
struct DevPKIError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
