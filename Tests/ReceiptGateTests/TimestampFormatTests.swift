import Foundation
import Testing
import ReceiptCore

/// The hand-written timestamp (log lines, `first_verified_at`) says what Foundation's ISO 8601
/// formatter says, to the millisecond, for dates a ledger holds.
@Suite struct TimestampFormat {
    @Test func matchesFoundationsISO8601FormatterWithFractionalSeconds() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var generator = SystemRandomNumberGenerator()
        var dates = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_764_547_199.999),
                     Date(timeIntervalSince1970: 951_782_400.5), Date(timeIntervalSince1970: 1.9996), Date(timeIntervalSince1970: 1_764_547_199.9996), Date(timeIntervalSince1970: 4_102_444_800.001)]
        for _ in 0..<2000 {
            // Microsecond precision, as timestamps come back from Postgres.
            dates.append(Date(timeIntervalSince1970: Double(Int64.random(in: 0...7_258_118_400_000_000, using: &generator)) / 1_000_000))
        }
        let mismatches = dates.map { (UTCTimestamp.milliseconds($0), formatter.string(from: $0)) }.filter { $0.0 != $0.1 }
        #expect(mismatches.count == 0, "ours vs Foundation: \(mismatches.prefix(3))")
    }
}

/// Log lines are built byte by byte now; they must still be one JSON object a reader can parse,
/// with time, level and message first and a field overriding metadata of the same name.
@Suite struct LogLineFormat {
    @Test func fieldsOverrideMetadataAndLineSeparatorsAreEscaped() throws {
        let lines = LockedLines()
        let logger = Logger(minimumLevel: .info, sink: LogSink { line in lines.append(line) }, metadata: ["a": "meta", "z": "kept"])
        logger.info("one\u{2028}two é", ["a": "field", "b": "\u{7}"])
        let line = try #require(lines.all.first)
        #expect(line.hasPrefix("{\"time\":\""))
        #expect(line.contains("\"level\":\"info\",\"message\":\"one\\u2028two é\",\"a\":\"field\",\"b\":\"\\u0007\",\"z\":\"kept\"}"), "\(line)")
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String]
        #expect(object?["message"] == "one\u{2028}two é")
    }
}

private final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.withLock { lines.append(line) } }
    var all: [String] { lock.withLock { lines } }
}
