package import Foundation

/// A deliberately small HTTP/1.1 client over a plain socket, for tests that need control over
/// the bytes on the wire (bodies in pieces, oversized uploads). Each call runs on its own thread,
/// so blocking socket I/O never occupies Swift's cooperative pool.
package enum RawHTTP {
    package struct Response: Sendable {
        package let status: Int
        package let headers: [String: String]  // lower-cased names; the last of a repeated one
        package let body: Data
        /// Every header line in order, names lower-cased (`Set-Cookie` comes once per cookie).
        package var lines: [HeaderLine] = []
        package var text: String { String(decoding: body, as: UTF8.self) }

        package struct HeaderLine: Sendable {
            package let name: String
            package let value: String
        }

        package func allHeaders(_ name: String) -> [String] {
            lines.filter { $0.name == name.lowercased() }.map(\.value)
        }
        package func json() throws -> [String: Any] {
            (try JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    /// Sends `pieces` one after another (pausing `pause` between them) and reads the response
    /// until the server closes the connection. The default wait is longer than the service's own
    /// 30 s handler deadline: the whole suite runs at once on two cores, and a slow answer is the
    /// service's to give (as 503 if it must), not the test client's to cut short.
    package static func exchange(
        port: Int, pieces: [Data], pause: Duration = .zero, timeout: TimeInterval = 45
    ) async throws -> Response {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Result { try blockingExchange(port: port, pieces: pieces, pause: pause, timeout: timeout) })
            }
            thread.start()
        }
    }

    /// How a connection ended: the server closed it (with what it sent first), or our own read
    /// timeout gave up waiting while it stayed open.
    package enum Ending: Sendable, Equatable {
        case closedByServer(Data)
        case stillOpenAtOurTimeout
    }

    /// Sends `pieces`, then reads until the connection ends, and says how it ended. `timeout` is
    /// only where the test stops waiting for a server that never hangs up: generous, since a
    /// machine busy with other work may take long to get there.
    package static func ending(port: Int, pieces: [Data], timeout: TimeInterval = 60) async throws -> Ending {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread {
                continuation.resume(
                    with: Result {
                        let (received, closed) = try blockingSendAndRead(
                            port: port, pieces: pieces, pause: .zero, timeout: timeout)
                        return closed ? .closedByServer(received) : .stillOpenAtOurTimeout
                    })
            }
            thread.start()
        }
    }

    /// A complete request with `Connection: close`.
    package static func request(
        port: Int, method: String = "GET", path: String, headers: [String: String] = [:],
        body: Data = Data()
    ) async throws -> Response {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" { head += "Content-Length: \(body.count)\r\n" }
        head += "\r\n"
        return try await exchange(port: port, pieces: [Data(head.utf8) + body])
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago (for servers a test starts itself).
    package static func freePort() throws -> Int {
        let (descriptor, port) = try boundLoopbackSocket()
        close(descriptor)
        return port
    }

    /// A loopback port held bound but not listening while `body` runs: connecting to it is
    /// refused, and no other test can start a server on it meanwhile (a port merely found free
    /// could be taken by a parallel test before the connection is tried).
    package static func withRefusingPort<T>(_ body: (Int) async throws -> T) async throws -> T {
        let (descriptor, port) = try boundLoopbackSocket()
        defer { close(descriptor) }
        return try await body(port)
    }

    /// A TCP socket bound to a port of 127.0.0.1 the kernel picked, and that port.
    private static func boundLoopbackSocket() throws -> (descriptor: Int32, port: Int) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, length) == 0 && getsockname(descriptor, $0, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw Failure(description: "cannot bind a loopback port")
        }
        return (descriptor, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// True if something accepts TCP connections on 127.0.0.1:`port`.
    package static func isListening(port: Int) -> Bool {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        return connectToLoopback(descriptor, port: port)
    }

    static func connectToLoopback(_ descriptor: Int32, port: Int) -> Bool {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    static func blockingExchange(port: Int, pieces: [Data], pause: Duration, timeout: TimeInterval) throws -> Response {
        try parse(blockingSendAndRead(port: port, pieces: pieces, pause: pause, timeout: timeout).received)
    }

    /// What came back until the connection ended, and whether it ended by the server closing it
    /// (rather than by our read timeout or an error).
    static func blockingSendAndRead(
        port: Int, pieces: [Data], pause: Duration, timeout: TimeInterval
    ) throws -> (received: Data, closedByServer: Bool) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed") }
        defer { close(descriptor) }
        var time = timeval(tv_sec: Int(timeout), tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        guard connectToLoopback(descriptor, port: port) else {
            throw Failure(description: "connect to port \(port) failed (errno \(errno))")
        }
        for (index, piece) in pieces.enumerated() {
            if index > 0 && pause > .zero {
                let (seconds, attoseconds) = pause.components
                usleep(UInt32(seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
            }
            var offset = 0
            while offset < piece.count {
                let sent = piece.withUnsafeBytes {
                    send(descriptor, $0.baseAddress! + offset, piece.count - offset, Int32(MSG_NOSIGNAL))
                }
                // The server may answer (413) and close before reading everything: stop sending, read the answer.
                if sent <= 0 { break }
                offset += sent
            }
        }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count == 0 { return (received, true) }
            if count < 0 { return (received, errno == ECONNRESET) }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    package static func parse(_ data: Data) throws -> Response {
        guard let separator = data.range(of: Data("\r\n\r\n".utf8)) else {
            throw Failure(description: "no complete response head in \(data.count) bytes")
        }
        let head = String(decoding: data[..<separator.lowerBound], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = head[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw Failure(description: "bad status line \(head[0])")
        }
        var headers: [String: String] = [:]
        var lines: [Response.HeaderLine] = []
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased(),
                value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name] = value
            lines.append(Response.HeaderLine(name: name, value: value))
        }
        var body = Data(data[separator.upperBound...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        if let length = headers["content-length"].flatMap(Int.init), body.count > length { body = body.prefix(length) }
        return Response(status: status, headers: headers, body: body, lines: lines)
    }

    static func dechunk(_ data: Data) -> Data {
        var result = Data()
        var rest = data[...]
        while let lineEnd = rest.range(of: Data("\r\n".utf8)) {
            guard let size = Int(String(decoding: rest[..<lineEnd.lowerBound], as: UTF8.self), radix: 16), size > 0
            else { break }
            let start = lineEnd.upperBound
            result.append(rest[start..<min(start + size, rest.endIndex)])
            rest = rest[min(start + size + 2, rest.endIndex)...]
        }
        return result
    }
}
