import CMicroHTTPD
package import Foundation

/// A response body written while it is sent, for answers too big to hold (an export of a year of
/// purchases): the handler returns at once with the status and headers, and `produce` runs once
/// the client asks for the body, writing it piece by piece. At most `bufferLimit` bytes wait
/// between the producer and the socket: a writer finding the buffer full waits for the client to
/// read, so a slow client slows the producer instead of filling memory. The connection is
/// suspended while the buffer is empty and resumed by the next write (libmicrohttpd's content
/// reader, `MHD_create_response_from_callback`). The body goes out chunked; a producer that throws
/// ends it without the last chunk, so the client sees it cut rather than complete. A client that
/// goes away cancels it: the producer's next write throws `Cancelled`.
package final class HTTPBodyStream: @unchecked Sendable {
    package typealias Producer = @Sendable (HTTPBodyStream) async throws -> Void

    package struct Cancelled: Error {}

    private let produce: Producer
    private let bufferLimit: Int
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var pending: [Data] = []
    private var readOffset = 0
    private var buffered = 0
    private var started = false, finished = false, failed = false, cancelled = false
    /// The connection, once the response is queued on it (as an address: it crosses threads).
    private var connection: UInt?
    private var suspended = false

    package init(bufferLimit: Int = 256 * 1024, produce: @escaping Producer) {
        self.bufferLimit = bufferLimit
        self.produce = produce
    }

    /// Hands `data` to the client, waiting while the buffer is full. Blocks its thread: call it
    /// from a thread of its own (a database thread, as a cursor's rows arrive), not from Swift's
    /// cooperative pool.
    package func write(_ data: Data) throws {
        guard !data.isEmpty else { return }
        condition.lock()
        while buffered >= bufferLimit && !cancelled { condition.wait() }
        if cancelled {
            condition.unlock()
            throw Cancelled()
        }
        pending.append(data)
        buffered += data.count
        let waiting = takeSuspended()
        condition.unlock()
        if let waiting { MHD_resume_connection(OpaquePointer(bitPattern: waiting)) }
    }

    package func write(_ text: String) throws { try write(Data(text.utf8)) }

    /// Called with the lock held: the connection to resume, if it waits for data.
    private func takeSuspended() -> UInt? {
        guard suspended else { return nil }
        suspended = false
        return connection
    }

    private func finish(failed: Bool) {
        condition.lock()
        finished = true
        self.failed = failed
        let waiting = takeSuspended()
        condition.broadcast()
        condition.unlock()
        if let waiting { MHD_resume_connection(OpaquePointer(bitPattern: waiting)) }
    }

    func attach(to connection: OpaquePointer) {
        condition.lock()
        self.connection = UInt(bitPattern: connection)
        condition.unlock()
    }

    /// libmicrohttpd asks for up to `max` bytes: some, or none after suspending the connection
    /// until a write (0), or the end (`MHD_CONTENT_READER_END_OF_STREAM`, or `…_WITH_ERROR`).
    func read(into buffer: UnsafeMutablePointer<CChar>, max: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        if !started {
            started = true
            Task { [self] in
                do {
                    try await produce(self)
                    finish(failed: false)
                } catch {
                    finish(failed: true)
                }
            }
        }
        if buffered > 0 {
            var copied = 0
            let target = UnsafeMutableRawPointer(buffer)
            while copied < max, let first = pending.first {
                let count = min(max - copied, first.count - readOffset)
                first.withUnsafeBytes { bytes in
                    (target + copied).copyMemory(from: bytes.baseAddress! + readOffset, byteCount: count)
                }
                copied += count
                readOffset += count
                if readOffset == first.count {
                    pending.removeFirst()
                    readOffset = 0
                }
            }
            buffered -= copied
            condition.broadcast()
            return copied
        }
        if finished { return failed ? -2 : -1 }
        guard let connection else { return -2 }
        suspended = true
        MHD_suspend_connection(OpaquePointer(bitPattern: connection))
        return 0
    }

    /// The response is done with (sent, or its connection gone): a waiting producer stops.
    func cancel() {
        condition.lock()
        cancelled = true
        pending = []
        buffered = 0
        condition.broadcast()
        condition.unlock()
    }
}

/// libmicrohttpd's reader of a streamed body; `context` is the stream, retained by the response.
let streamedBodyReader: MHD_ContentReaderCallback = { context, _, buffer, max in
    guard let context, let buffer else { return -2 }
    return Unmanaged<HTTPBodyStream>.fromOpaque(context).takeUnretainedValue().read(into: buffer, max: max)
}

/// libmicrohttpd is done with a streamed response: its hold on the stream ends.
let streamedBodyReleased: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    let stream = Unmanaged<HTTPBodyStream>.fromOpaque(context)
    stream.takeUnretainedValue().cancel()
    stream.release()
}
