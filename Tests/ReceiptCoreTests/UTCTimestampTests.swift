import Foundation
import ReceiptCore
import TestSupport
import Testing

/// The hand-written timestamp (log lines, `first_verified_at`) says what Foundation's ISO 8601
/// formatter says, to the millisecond, for dates a ledger holds.
@Suite struct UTCTimestampFormat {
    @Test func matchesFoundationsISO8601FormatterWithFractionalSeconds() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        var random = SeededRandom()
        var dates = [
            Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_764_547_199.999),
            Date(timeIntervalSince1970: 951_782_400.5), Date(timeIntervalSince1970: 1.9996),
            Date(timeIntervalSince1970: 1_764_547_199.9996),
            Date(timeIntervalSince1970: 4_102_444_800.001),
        ]
        for _ in 0..<2000 {
            // Microsecond precision, as timestamps come back from Postgres.
            dates.append(
                Date(
                    timeIntervalSince1970: Double(Int64.random(in: 0...7_258_118_400_000_000, using: &random))
                        / 1_000_000))
        }
        let mismatches = dates.map { (UTCTimestamp.milliseconds($0), formatter.string(from: $0)) }.filter {
            $0.0 != $0.1
        }
        #expect(mismatches.count == 0, "ours vs Foundation: \(mismatches.prefix(3)) (\(random.replay))")
    }
}
