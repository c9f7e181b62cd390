import Foundation

/// What `dev purchase` signed, one file a transaction under `dev-pki/purchases/`, so `dev notify`
/// can sign the store's news of it (a refund, a renewal) from its id alone.
struct DevPurchaseRecords {
    let directory: URL

    init(pkiDirectory: URL) { directory = pkiDirectory.appendingPathComponent("purchases") }

    func keep(_ payload: DevPurchase.Payload) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        try encoder.encode(payload).write(to: file(payload.transactionId), options: .atomic)
    }

    /// The transaction signed with this id; nil when this machine's `dev purchase` never signed it.
    func find(_ transactionID: String) throws -> DevPurchase.Payload? {
        guard let data = try? Data(contentsOf: file(transactionID)) else { return nil }
        return try JSONDecoder().decode(DevPurchase.Payload.self, from: data)
    }

    private func file(_ transactionID: String) -> URL { directory.appendingPathComponent("\(transactionID).json") }
}
