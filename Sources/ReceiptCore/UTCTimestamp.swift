package import Foundation

/// `2026-11-30T12:34:56.789Z`, written by hand: this runs for every log line and most answers,
/// and a Foundation formatter (ICU underneath) costs many times more and needs a lock to share.
package enum UTCTimestamp {
    /// To the nearest millisecond, as ISO8601DateFormatter with fractional seconds writes it.
    package static func milliseconds(_ date: Date) -> String {
        let totalMillis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        var seconds = time_t(Int64((Double(totalMillis) / 1000).rounded(.down)))
        let millis = Int(totalMillis - Int64(seconds) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var out = [UInt8]()
        out.reserveCapacity(24)
        append(&out, Int(parts.tm_year) + 1900, digits: 4)
        out.append(UInt8(ascii: "-"))
        append(&out, Int(parts.tm_mon) + 1, digits: 2)
        out.append(UInt8(ascii: "-"))
        append(&out, Int(parts.tm_mday), digits: 2)
        out.append(UInt8(ascii: "T"))
        append(&out, Int(parts.tm_hour), digits: 2)
        out.append(UInt8(ascii: ":"))
        append(&out, Int(parts.tm_min), digits: 2)
        out.append(UInt8(ascii: ":"))
        append(&out, Int(parts.tm_sec), digits: 2)
        out.append(UInt8(ascii: "."))
        append(&out, millis, digits: 3)
        out.append(UInt8(ascii: "Z"))
        return String(decoding: out, as: UTF8.self)
    }

    private static func append(_ out: inout [UInt8], _ value: Int, digits: Int) {
        var divisor = 1
        for _ in 1..<digits { divisor *= 10 }
        var rest = max(value, 0)
        if rest >= divisor * 10 { out.append(contentsOf: String(rest).utf8); return }
        while divisor > 0 {
            out.append(UInt8(ascii: "0") + UInt8(rest / divisor))
            rest %= divisor
            divisor /= 10
        }
    }
}
