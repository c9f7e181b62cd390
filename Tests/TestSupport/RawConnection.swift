package import Foundation

/// One TCP connection to 127.0.0.1 that a test holds open and drives by hand: to fill a per-address
/// connection limit, or to send a request a byte at a time. Its calls block, so run them on a
/// thread of their own (`onOwnThread`), never on Swift's cooperative pool.
package final class RawConnection: @unchecked Sendable {
    private let descriptor: Int32

    package init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawHTTP.Failure(description: "socket() failed") }
        guard RawHTTP.connectToLoopback(descriptor, port: port) else {
            close(descriptor)
            throw RawHTTP.Failure(description: "connect to port \(port) failed (errno \(errno))")
        }
    }

    deinit { close(descriptor) }

    /// Sends all of `data`; false if the peer has closed or reset the connection.
    @discardableResult
    package func send(_ data: Data) -> Bool {
        var offset = 0
        while offset < data.count {
            let sent = data.withUnsafeBytes { raw -> Int in
                guard let base = raw.baseAddress else { return 0 }
                return Foundation.send(descriptor, base + offset, data.count - offset, Int32(MSG_NOSIGNAL))
            }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Waits up to `milliseconds` for the peer to send something or hang up.
    package func becomesReadable(within milliseconds: Int32) -> Bool {
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0
    }

    /// Everything the peer sends until it closes the connection (or resets it, or `timeout` passes).
    /// `closedByPeer` is false if the timeout ended the wait.
    package func readToEnd(timeout: TimeInterval = 10) -> (data: Data, closedByPeer: Bool) {
        var time = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0 {
                received.append(contentsOf: buffer[0..<count])
                continue
            }
            let timedOut = count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
            return (received, !timedOut)
        }
    }
}
