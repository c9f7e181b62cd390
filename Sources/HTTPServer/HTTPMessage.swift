package import Foundation

/// Header fields with case-insensitive lookup, in arrival order.
package struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    package private(set) var fields: [(name: String, value: String)] = []

    package init() {}
    package init(capacity: Int) { fields.reserveCapacity(capacity) }
    package init(dictionaryLiteral elements: (String, String)...) {
        fields = elements.map { (name: $0.0, value: $0.1) }
    }

    /// The first value of a field, or nil.
    package subscript(name: String) -> String? {
        fields.first { Self.sameName($0.name, name) }?.value
    }

    package mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

    package mutating func replace(_ name: String, _ value: String) {
        fields.removeAll { Self.sameName($0.name, name) }
        fields.append((name, value))
    }

    /// Field names compare without regard to ASCII case (RFC 9110 §5.1), byte by byte: headers
    /// are looked up several times per request, and lower-casing both sides allocates. Native
    /// strings are compared over their contiguous bytes (the `utf8` iterator costs several times more).
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let contiguous = a.utf8.withContiguousStorageIfAvailable { x in
            b.utf8.withContiguousStorageIfAvailable { y in
                for index in 0..<x.count where !sameNameByte(x[index], y[index]) { return false }
                return true
            }
        }
        if let contiguous = contiguous ?? nil { return contiguous }
        return zip(a.utf8, b.utf8).allSatisfy(sameNameByte)
    }

    @inline(__always)
    private static func sameNameByte(_ x: UInt8, _ y: UInt8) -> Bool {
        x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
    }

    package func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    /// A field name in lower case: ASCII letters only, as names are tokens (RFC 9110 §5.6.2).
    /// A name already in lower case is returned as it is, without the Unicode case mapping
    /// (and allocation) of `lowercased()`.
    package static func lowercasedName(_ name: String) -> String {
        guard name.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return name }
        return String(
            decoding: name.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 | 0x20 : $0 },
            as: UTF8.self)
    }
}

package struct HTTPRequest: Sendable {
    package var method: String
    /// The path without the query string, percent-decoded by libmicrohttpd: for logs and
    /// messages. Routing reads `target`, whose encoded slashes still separate nothing.
    package var path: String
    package var query: [String: String]
    /// The request target as sent (`/v1/players/p%2D1/transactions?limit=5`), undecoded: what a
    /// signature over the path and query covers. In-process requests default to `path`.
    package var target: String
    package var headers: HTTPHeaders
    package var body: Data
    package var remoteAddress: String?
    /// Set by the responder: the caller's `X-Request-Id` if it is sane, else a fresh UUID.
    package internal(set) var requestID: String = ""
    /// The matched route pattern (`/v1/transactions/{store}/{id}`), for logs and metrics;
    /// "unmatched" for a 404.
    package internal(set) var route: String = "unmatched"
    /// Each percent-decoded on its own, after the path was split (`Router.segments(ofTarget:)`).
    package internal(set) var pathParameters: [String: String] = [:]
    /// Set by the server when the route's `headerCheck` already passed before the body was read.
    var headerChecked = false
    /// Set by the server when `route` and `pathParameters` were found before the body was read.
    var routed = false
    /// Set by the responder when the target's percent-encoding is broken: answered 400.
    var malformedPath = false

    package init(
        method: String, path: String, query: [String: String] = [:], headers: HTTPHeaders = HTTPHeaders(),
        body: Data = Data(), remoteAddress: String? = nil
    ) {
        self.method = method
        self.path = path
        self.target = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// A path parameter the route declared; a missing one is a programming error surfaced as 500.
    package func parameter(_ name: String) throws -> String {
        guard let value = pathParameters[name] else {
            throw HTTPError(status: 500, code: "INTERNAL_ERROR", message: "route has no parameter \(name)")
        }
        return value
    }
}

package struct HTTPResponse: Sendable {
    package var status: Int
    package var headers: HTTPHeaders
    package var body: Data
    /// A body written while it is sent, in place of `body` (which is then empty).
    package var stream: HTTPBodyStream?

    package init(status: Int = 200, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    package static func text(
        _ text: String, status: Int = 200, contentType: String = "text/plain; charset=utf-8"
    ) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Data(text.utf8))
    }
}

/// An error a handler throws to answer with a JSON error body `{"error": code, "message": ...}`.
package struct HTTPError: Error, Sendable, Equatable, CustomStringConvertible {
    package let status: Int
    package let code: String
    package let message: String
    package var headers: HTTPHeaders

    package init(status: Int, code: String, message: String, headers: HTTPHeaders = HTTPHeaders()) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
    }

    package var description: String { "\(status) \(code): \(message)" }

    package static func == (lhs: HTTPError, rhs: HTTPError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code
    }

    package var response: HTTPResponse {
        var response = HTTPResponse.json(ErrorBody(error: code, message: message), status: status)
        for field in headers { response.headers.add(field.name, field.value) }
        return response
    }

    struct ErrorBody: Encodable {
        let error: String
        let message: String
    }
}
