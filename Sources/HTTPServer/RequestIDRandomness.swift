import CShims
import Foundation

/// Random bytes for request ids, drawn from the kernel (`getrandom`) 4 KB at a time: the system
/// generator makes one system call per 8 bytes, two per request. Ids need to be unique and
/// unguessable, not secret keys, and these bytes are used for nothing else.
final class RequestIDRandomness: @unchecked Sendable {
    static let shared = RequestIDRandomness()

    private let lock = NSLock()  // guards buffer and used
    private var buffer = [UInt8](repeating: 0, count: 4096)
    private var used = 4096

    func next16() -> (UInt64, UInt64) {
        lock.lock()
        defer { lock.unlock() }
        if used + 16 > buffer.count {
            refill()
            used = 0
        }
        defer { used += 16 }
        return buffer.withUnsafeBytes { raw in
            (raw.loadUnaligned(fromByteOffset: used, as: UInt64.self), raw.loadUnaligned(fromByteOffset: used + 8, as: UInt64.self))
        }
    }

    private func refill() {
        let complete = buffer.withUnsafeMutableBytes { rg_random_bytes($0.baseAddress, $0.count) == 0 }
        // getrandom cannot fail on a supported kernel; the stdlib generator stands in if it ever does.
        if !complete {
            var generator = SystemRandomNumberGenerator()
            buffer = (0..<buffer.count).map { _ in generator.next() }
        }
    }
}
