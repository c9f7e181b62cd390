import Foundation
import Postgres

extension NotificationRepository {
    /// A stored store notification as an operator sees it: what the provider decoded, never the raw body.
    public struct Listed: Encodable, Sendable {
        let id: Int64, store: String, notificationID: String, type: String, receivedAt: Date
        let decoded: StoredJSON

        enum CodingKeys: String, CodingKey {
            case id, store, notificationID = "notification_id", type, receivedAt = "received_at", decoded
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(store, forKey: .store)
            try container.encode(notificationID, forKey: .notificationID)
            try container.encode(type, forKey: .type)
            try container.encode(Timestamps.iso8601(receivedAt), forKey: .receivedAt)
            try container.encode(decoded, forKey: .decoded)
        }
    }

    /// The 100 newest, optionally of one store and one type (both matched exactly).
    public func list(store: String?, type: String?, limit: Int = 100) async throws -> [Listed] {
        try await pool.query(
            """
            SELECT id, store, notification_id, notification_type, received_at, decoded::text AS decoded
            FROM store_notifications
            WHERE (\(store)::text IS NULL OR store = \(store)) AND (\(type)::text IS NULL OR notification_type = \(type))
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map { row in
            Listed(
                id: try row.decode("id"), store: try row.decode("store"),
                notificationID: try row.decode("notification_id"),
                type: try row.decode("notification_type"), receivedAt: try row.decode("received_at"),
                decoded: StoredJSON(text: try row.decode("decoded", as: String.self)))
        }
    }
}

/// JSON read back from a jsonb column and encoded again unchanged: the operator sees what the
/// provider decoded, whatever its shape.
indirect enum StoredJSON: Codable, Sendable {
    case object([String: StoredJSON]), array([StoredJSON]), string(String), bool(Bool), integer(Int64), number(Double),
        null

    /// `null` for text that is not JSON (the column is jsonb, so only a broken database gives that).
    init(text: String) {
        self = (try? JSONDecoder().decode(StoredJSON.self, from: Data(text.utf8))) ?? .null
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        // Booleans before numbers: the decoder refuses to read a number as a Bool, and vice versa.
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([StoredJSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: StoredJSON].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .object(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .bool(let value): try container.encode(value)
        case .integer(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .null: try container.encodeNil()
        }
    }
}
