import Foundation

extension UUID {
    /// A version 7 UUID (RFC 9562): the Unix time in milliseconds, then random bits. An outbox
    /// message's event id is a unique key: random ids land on random pages of its index, each
    /// dirtied page written whole to the WAL after a checkpoint; ids that grow with time land on
    /// the index's last page, as the ledger's other keys do. The clock here only orders keys.
    /// The random bits come from the system's generator: Foundation's `UUID()` opened and read
    /// `/dev/urandom` for every id, a system call of its own for each purchase with a webhook.
    static func timeOrdered(at date: Date = Date()) -> UUID {
        let milliseconds = UInt64(max(0, date.timeIntervalSince1970 * 1000))
        var random = SystemRandomNumberGenerator()
        let high = (milliseconds << 16) | UInt64(random.next() as UInt16)
        let low = random.next() as UInt64
        var bytes = uuid_t(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { buffer in
            buffer.storeBytes(of: high.bigEndian, as: UInt64.self)
            buffer.storeBytes(of: low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
        bytes.6 = 0x70 | (bytes.6 & 0x0F)  // version 7
        bytes.8 = 0x80 | (bytes.8 & 0x3F)  // the RFC's variant
        return UUID(uuid: bytes)
    }

    /// The id as lowercase text, as event ids are sent and stored (8-4-4-4-12 hex digits), written
    /// directly: `uuidString.lowercased()` formatted it with `sprintf` and then copied it again.
    var lowercasedText: String {
        withUnsafeBytes(of: uuid) { bytes in
            String(unsafeUninitializedCapacity: 36) { text in
                let digits: StaticString = "0123456789abcdef"
                var at = 0
                for (index, byte) in bytes.enumerated() {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[at] = UInt8(ascii: "-")
                        at += 1
                    }
                    text[at] = digits.utf8Start[Int(byte >> 4)]
                    text[at + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    at += 2
                }
                return at
            }
        }
    }
}
