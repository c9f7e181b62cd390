/// One line of a response's head as libcurl hands it over (CRLF included), read as bytes: a
/// webhook's answer passes through here on every delivery, and Foundation's trimming bridged each
/// line through UTF-16 for whitespace HTTP does not have.
enum ResponseHeaderLine: Equatable {
    /// A status line (`HTTP/1.1 200 OK`): a new response begins (after a `100 Continue`).
    case status
    /// `name: value`, the value without its surrounding spaces and tabs.
    case field(name: String, value: String)
    /// The blank line that ends the head, or a line that is neither.
    case other

    init(_ bytes: UnsafeRawBufferPointer) {
        let line = Self.trimmed(bytes[...], of: [0x20, 0x09, 0x0D, 0x0A])
        if line.starts(with: "HTTP/".utf8) {
            self = .status
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            let value = Self.trimmed(line[(colon + 1)...], of: [0x20, 0x09])
            self = .field(
                name: String(decoding: line[..<colon], as: UTF8.self), value: String(decoding: value, as: UTF8.self))
        } else {
            self = .other
        }
    }

    private typealias Bytes = Slice<UnsafeRawBufferPointer>

    private static func trimmed(_ bytes: Bytes, of blanks: [UInt8]) -> Bytes {
        guard let first = bytes.firstIndex(where: { !blanks.contains($0) }),
            let last = bytes.lastIndex(where: { !blanks.contains($0) })
        else { return bytes[bytes.endIndex...] }
        return bytes[first...last]
    }
}
