import Foundation

extension UUID {
    /// A version 7 UUID (RFC 9562): the Unix time in milliseconds, then random bits. An outbox
    /// message's event id is a unique key: random ids land on random pages of its index, each
    /// dirtied page written whole to the WAL after a checkpoint; ids that grow with time land on
    /// the index's last page, as the ledger's other keys do. The clock here only orders keys.
    static func timeOrdered(at date: Date = Date()) -> UUID {
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        var bytes = UUID().uuid  // 122 random bits; the first 48 and the version are replaced
        bytes.0 = UInt8(truncatingIfNeeded: milliseconds >> 40)
        bytes.1 = UInt8(truncatingIfNeeded: milliseconds >> 32)
        bytes.2 = UInt8(truncatingIfNeeded: milliseconds >> 24)
        bytes.3 = UInt8(truncatingIfNeeded: milliseconds >> 16)
        bytes.4 = UInt8(truncatingIfNeeded: milliseconds >> 8)
        bytes.5 = UInt8(truncatingIfNeeded: milliseconds)
        bytes.6 = 0x70 | (bytes.6 & 0x0F)  // version 7
        bytes.8 = 0x80 | (bytes.8 & 0x3F)  // the RFC's variant
        return UUID(uuid: bytes)
    }
}
