import CShims
import Foundation
import Synchronization

/// Random bytes for request ids, drawn from the kernel (`getrandom`) 4 KB at a time: the system
/// generator makes one system call per 8 bytes, two per request. Ids need to be unique and
/// unguessable, not secret keys, and these bytes are used for nothing else.
final class RequestIDRandomness: Sendable {
    static let shared = RequestIDRandomness()

    private struct Pool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var used = 4096
    }

    private let pool = Mutex(Pool())

    func next16() -> (UInt64, UInt64) {
        pool.withLock { pool in
            if pool.used + 16 > pool.buffer.count {
                Self.refill(&pool.buffer)
                pool.used = 0
            }
            defer { pool.used += 16 }
            return pool.buffer.withUnsafeBytes { raw in
                (
                    raw.loadUnaligned(fromByteOffset: pool.used, as: UInt64.self),
                    raw.loadUnaligned(fromByteOffset: pool.used + 8, as: UInt64.self)
                )
            }
        }
    }

    private static func refill(_ buffer: inout [UInt8]) {
        let complete = buffer.withUnsafeMutableBytes { rg_random_bytes($0.baseAddress, $0.count) == 0 }
        // getrandom cannot fail on a supported kernel; the stdlib generator stands in if it ever does.
        if !complete {
            var generator = SystemRandomNumberGenerator()
            buffer = (0..<buffer.count).map { _ in generator.next() }
        }
    }
}
