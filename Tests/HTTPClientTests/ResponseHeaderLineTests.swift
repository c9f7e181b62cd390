import Testing

@testable import HTTPClient

/// Response head lines as libcurl hands them over, CRLF included.
@Suite struct ResponseHeaderLineTests {
    static func parsed(_ line: String) -> ResponseHeaderLine {
        Array(line.utf8).withUnsafeBytes { ResponseHeaderLine($0) }
    }

    @Test func aFieldKeepsItsNameAndLosesTheSpacesAroundItsValue() {
        #expect(Self.parsed("Retry-After:  120 \r\n") == .field(name: "Retry-After", value: "120"))
        #expect(Self.parsed("X-Note:\ta: b\t\r\n") == .field(name: "X-Note", value: "a: b"))
        #expect(Self.parsed("Empty:\r\n") == .field(name: "Empty", value: ""))
    }

    @Test func aStatusLineStartsANewResponseAndTheBlankLineIsNothing() {
        #expect(Self.parsed("HTTP/1.1 100 Continue\r\n") == .status)
        #expect(Self.parsed("HTTP/2 200\r\n") == .status)
        #expect(Self.parsed("\r\n") == .other)
        #expect(Self.parsed("no colon here\r\n") == .other)
    }

    @Test func bytesThatAreNotUTF8AreReplacedNotDropped() {
        let line: [UInt8] = Array("X-Odd: a".utf8) + [0xFF] + Array("b\r\n".utf8)
        #expect(line.withUnsafeBytes { ResponseHeaderLine($0) } == .field(name: "X-Odd", value: "a\u{FFFD}b"))
    }
}
