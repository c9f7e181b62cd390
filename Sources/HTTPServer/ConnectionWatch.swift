import Foundation
import Synchronization
import Workers

/// One connection's deadline for receiving a whole request, head and body.
///
/// libmicrohttpd's connection timeout only measures silence: a client that trickles a byte every
/// few seconds keeps a connection (and its buffer) forever. The clock starts when the connection
/// is accepted (for its first request) or when a later request's line arrives, and stops once the
/// request is fully received or answered from its head. If it runs out first, the deadline thread
/// writes a 408 to the socket and shuts it down; libmicrohttpd then sees the socket fail, closes
/// the connection and reports it as usual. Nothing else is written to a socket outside
/// libmicrohttpd, and only while it is reading a request, when it writes nothing itself.
///
/// The descriptor stays this connection's while `closed` is false: libmicrohttpd closes it only
/// after the notify-connection callback (which sets `closed` under the lock) has returned.
final class ConnectionWatch: Sendable {
    private let descriptor: Int32

    private struct Clock {
        var closed = false
        var receiving = false
        var expired = false
        var deadline = ContinuousClock.now
        var watchID: Int?
    }

    private let clock = Mutex(Clock())

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    /// A request starts arriving. Does nothing while one is already being received (the first
    /// request's clock started when the connection was accepted).
    func beginReceiving(within timeout: Duration) {
        clock.withLock { clock in
            guard !clock.closed, !clock.receiving, descriptor >= 0 else { return }
            clock.receiving = true
            clock.expired = false
            clock.deadline = .now + timeout
            // Lock order: this lock, then the watcher's (which fires callbacks outside its own).
            clock.watchID = DeadlineWatcher.shared.add(deadline: clock.deadline) { [self] in expire() }
        }
    }

    /// True once the deadline has passed while the request was still arriving.
    var hasExpired: Bool {
        clock.withLock { $0.expired || ($0.receiving && ContinuousClock.now >= $0.deadline) }
    }

    /// The request has arrived whole, or is being answered from its head: stops the clock.
    /// False if the deadline passed first; the connection is then being cut and gets no answer.
    func finishReceiving() -> Bool {
        clock.withLock { clock in
            Self.stop(&clock)
            return !clock.expired
        }
    }

    /// libmicrohttpd is about to close the descriptor.
    func connectionClosed() {
        clock.withLock { clock in
            clock.closed = true
            Self.stop(&clock)
        }
    }

    private static func stop(_ clock: inout Clock) {
        if let watchID = clock.watchID { DeadlineWatcher.shared.remove(watchID) }
        clock.watchID = nil
        clock.receiving = false
    }

    private func expire() {
        clock.withLock { clock in
            clock.watchID = nil
            guard clock.receiving, !clock.closed, !clock.expired else { return }
            clock.expired = true
            Self.requestTimeout.withUnsafeBytes { bytes in
                _ = send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))  // best effort
            }
            shutdown(descriptor, Int32(SHUT_RDWR))
        }
    }

    private static let requestTimeout: Data = {
        let body = #"{"error":"REQUEST_TIMEOUT","message":"the request did not arrive in time"}"#
        let head =
            "HTTP/1.1 408 Request Timeout\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n"
        return Data((head + body).utf8)
    }()
}
