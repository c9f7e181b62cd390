package import Foundation
import OpenSSLCrypto

/// Encrypts secrets that must be used again (client HMAC secrets) under the master key with
/// AES-256-GCM. Each box is bound to its owner's id, so a box copied onto another row does not open.
public struct SecretBox: Sendable {
    private let key: Data

    package init(masterKey: Data) {
        precondition(masterKey.count == 32, "the master key is 32 bytes")
        key = masterKey
    }

    package func seal(_ secret: String, owner: String) throws -> Data {
        try AESGCM.seal(Data(secret.utf8), key: key, authenticating: Data("receiptgate:\(owner)".utf8))
    }

    package func open(_ box: Data, owner: String) throws -> String {
        let plaintext = try AESGCM.open(box, key: key, authenticating: Data("receiptgate:\(owner)".utf8))
        return String(decoding: plaintext, as: UTF8.self)
    }

    /// The master key from configuration, or the one kept in `<data dir>/master.key` (created
    /// with mode 0600 on first start).
    /// `creating`: generate the key when the data directory holds none (`serve`, `init`); otherwise
    /// its absence is a configuration error: a key made by a command would seal what the service
    /// can never open.
    package static func loadMasterKey(
        configured: Data?, dataDirectory: URL, creating: Bool = true
    ) throws -> (key: Data, generatedAt: String?) {
        if let configured { return (configured, nil) }
        let file = dataDirectory.appendingPathComponent("master.key")
        if let text = try? String(contentsOf: file, encoding: .utf8) {
            guard let key = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)), key.count == 32
            else {
                throw ServiceConfiguration.Invalid(
                    variable: "RECEIPTGATE_MASTER_KEY",
                    problem: "not set, and \(file.path) does not hold base64 of 32 bytes")
            }
            return (key, nil)
        }
        guard creating else {
            throw ServiceConfiguration.Invalid(
                variable: "RECEIPTGATE_MASTER_KEY",
                problem: """
                    not set, and there is no master key at \(file.standardizedFileURL.path); set it, point RECEIPTGATE_DATA_DIR at the \
                    service's data directory, or create one with `receiptgate init`
                    """)
        }
        try FileManager.default.createDirectory(at: dataDirectory, withIntermediateDirectories: true)
        let key = SecureRandom.bytes(32)
        // Create with 0600 from the start (no window where the key is world-readable); O_EXCL
        // so two processes starting at once cannot both write different keys.
        let descriptor = Foundation.open(file.path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            if errno == EEXIST { return try loadMasterKey(configured: nil, dataDirectory: dataDirectory) }
            throw ServiceConfiguration.Invalid(variable: "RECEIPTGATE_DATA_DIR", problem: "cannot create \(file.path)")
        }
        let line = Array((key.base64EncodedString() + "\n").utf8)
        let written = line.withUnsafeBytes { Foundation.write(descriptor, $0.baseAddress, $0.count) }
        fsync(descriptor)
        close(descriptor)
        guard written == line.count else {
            throw ServiceConfiguration.Invalid(variable: "RECEIPTGATE_DATA_DIR", problem: "cannot write \(file.path)")
        }
        return (key, file.path)
    }
}
