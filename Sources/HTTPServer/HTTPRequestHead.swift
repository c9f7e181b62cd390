import Foundation

/// What is known of a request once its headers have arrived and before any of its body has:
/// enough for a route's `headerCheck` to refuse it (missing credentials, wrong content type)
/// without the server reading, let alone buffering, the body.
package struct HTTPRequestHead: Sendable {
    package var method: String
    /// The path without the query string, percent-decoded.
    package var path: String
    package var query: [String: String]
    package var headers: HTTPHeaders
    package var remoteAddress: String?

    package init(
        method: String, path: String, query: [String: String] = [:], headers: HTTPHeaders = HTTPHeaders(),
        remoteAddress: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.remoteAddress = remoteAddress
    }

    /// The method for logs and metrics: see `HTTPMethod.normalized`.
    package var normalizedMethod: String { HTTPMethod.normalized(method) }

    /// True if the request announces a body (a non-zero Content-Length, or any Transfer-Encoding).
    package var announcesBody: Bool {
        if headers["Transfer-Encoding"] != nil { return true }
        guard let length = headers["Content-Length"] else { return false }
        // Anything but a lone "0" (with optional blanks around it) announces a body.
        let digits = length.utf8.filter { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") }
        return digits != [UInt8(ascii: "0")]
    }
}

extension HTTPRequest {
    /// The request without its body.
    package var head: HTTPRequestHead {
        HTTPRequestHead(method: method, path: path, query: query, headers: headers, remoteAddress: remoteAddress)
    }

    /// The method for logs and metrics: one of GET, HEAD, POST, PUT, DELETE, PATCH, OPTIONS, or `OTHER`.
    package var normalizedMethod: String { HTTPMethod.normalized(method) }
}
