public import Foundation
import Postgres

extension NotificationRepository {
    /// A notification's raw body as the store sent it (expanded when it was kept compactly); nil
    /// for an unknown id, empty once retention removed it.
    public func rawBody(id: Int64) async throws -> Data? {
        guard
            let row = try await pool.query(
                "SELECT raw_body, raw_format FROM store_notifications WHERE id = \(id)"
            ).first
        else { return nil }
        let stored: Data = try row.decode("raw_body")
        let format = Int16(try row.decode("raw_format", as: Int.self))
        var pieces: [Data: Data] = [:]
        for digest in RawBodyCompaction.digests(stored, format: format) where pieces[digest] == nil {
            pieces[digest] = try await pool.query(
                "SELECT piece FROM raw_body_pieces WHERE digest = \(digest)"
            ).first?.decode("piece", as: Data.self)
        }
        guard let body = RawBodyCompaction.expand(stored, format: format, piece: { pieces[$0] }) else {
            throw PostgresError(.queryFailed, "notification \(id)'s raw body names a piece that is not kept")
        }
        return body
    }
}
