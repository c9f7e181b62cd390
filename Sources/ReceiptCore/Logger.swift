import Foundation
import Synchronization
import Workers

/// Structured logging: one JSON object per line, with `time`, `level`, `message` and dotted
/// metadata keys (`request.id`, `client.id`). A logger is a value passed to whoever needs it.
public struct Logger: Sendable {
    public enum Level: String, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool {
            (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
        }
    }

    package let minimumLevel: Level
    package private(set) var metadata: [String: String]
    private let sink: LogSink

    public init(minimumLevel: Level = .info, sink: LogSink = .standardError, metadata: [String: String] = [:]) {
        self.minimumLevel = minimumLevel
        self.sink = sink
        self.metadata = metadata
    }

    /// A logger whose every line also carries `key: value`.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }

    package func debug(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        log(.debug, message(), fields)
    }
    public func info(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        log(.info, message(), fields)
    }
    public func warning(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        log(.warning, message(), fields)
    }
    public func error(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        log(.error, message(), fields)
    }

    package func log(_ level: Level, _ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        guard level >= minimumLevel else { return }
        sink.write(
            Self.line(
                time: Self.timestamp(), level: level.rawValue, message: message(), metadata: metadata, fields: fields))
    }

    /// The same line from fields given as pairs with distinct keys: a line written for every
    /// request builds no dictionary to hash its fields into and look them up again.
    package func log(_ level: Level, _ message: @autoclosure () -> String, pairs: [(String, String)]) {
        guard level >= minimumLevel else { return }
        sink.write(
            Self.line(
                time: Self.timestamp(), level: level.rawValue, message: message(), metadata: metadata, pairs: pairs))
    }

    /// Sorted keys with time, level and message first, so lines read well by eye too.
    static func encodeLine(_ object: [String: String]) -> String {
        var rest = object
        let time = rest.removeValue(forKey: "time"), level = rest.removeValue(forKey: "level"),
            message = rest.removeValue(forKey: "message")
        return line(time: time, level: level, message: message, metadata: [:], fields: rest)
    }

    /// One line straight into bytes: no merged dictionary, no intermediate strings. A field
    /// overrides metadata of the same name; `time`, `level` and `message` are the logger's own.
    static func line(
        time: String?, level: String?, message: String?, metadata: [String: String], fields: [String: String]
    ) -> String {
        line(time: time, level: level, message: message, metadata: metadata, pairs: fields.map { ($0.key, $0.value) })
    }

    /// `pairs` has distinct keys; one of them overrides metadata of the same name.
    static func line(
        time: String?, level: String?, message: String?, metadata: [String: String], pairs: [(String, String)]
    ) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256)
        bytes.append(UInt8(ascii: "{"))
        var first = true
        func pair(_ key: String, _ value: String) {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            appendJSONString(key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            appendJSONString(value, to: &bytes)
        }
        if let time { pair("time", time) }
        if let level { pair("level", level) }
        if let message { pair("message", message) }
        var entries = pairs
        for (key, value) in metadata where !pairs.contains(where: { $0.0 == key }) { entries.append((key, value)) }
        entries.sort { $0.0 < $1.0 }
        for (key, value) in entries where key != "time" && key != "level" && key != "message" { pair(key, value) }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `"text"` with quotes, backslashes, control characters and U+2028/U+2029 escaped.
    static func appendJSONString(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Nearly every value (ids, paths, codes) needs no escape: copy it whole when no byte can.
        let copiedWhole =
            text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
                guard
                    !utf8.contains(where: {
                        $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 == 0xE2
                    })
                else { return false }
                bytes.append(contentsOf: utf8)
                return true
            } ?? false
        if copiedWhole {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        var pendingE2 = 0  // how far into E2 80 (A8|A9) we are
        for byte in text.utf8 {
            if pendingE2 == 2 && (byte == 0xA8 || byte == 0xA9) {
                bytes.removeLast(2)
                bytes.append(contentsOf: (byte == 0xA8 ? "\\u2028" : "\\u2029").utf8)
                pendingE2 = 0
                continue
            }
            pendingE2 = byte == 0xE2 ? 1 : (pendingE2 == 1 && byte == 0x80 ? 2 : 0)
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: "\\\"".utf8)
            case UInt8(ascii: "\\"): bytes.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\n"): bytes.append(contentsOf: "\\n".utf8)
            case UInt8(ascii: "\r"): bytes.append(contentsOf: "\\r".utf8)
            case UInt8(ascii: "\t"): bytes.append(contentsOf: "\\t".utf8)
            case 0..<0x20:
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xf)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Said when lines had to be dropped because stderr did not keep up.
    static func droppedLine(_ count: Int) -> String {
        encodeLine([
            "time": timestamp(), "level": "warning", "message": "log lines dropped: stderr did not keep up",
            "count": String(count),
        ]) + "\n"
    }

    /// A log line says when it was written, by the machine's clock: the logger is infrastructure,
    /// and a moved service clock must not make its lines lie about when they happened.
    static func timestamp() -> String { UTCTimestamp.milliseconds(Date()) }
}

/// Where log lines go. Whole lines are written under a lock so concurrent lines never interleave.
public final class LogSink: Sendable {
    private let lock = Mutex(())
    private let writeLine: @Sendable (String) -> Void

    package init(_ writeLine: @escaping @Sendable (String) -> Void) {
        self.writeLine = writeLine
    }

    /// File descriptor 2, written off the caller's thread (`StandardErrorBuffer`).
    public static let standardError = LogSink { line in standardErrorBuffer.append(line) }

    /// Made with the first line; whatever it holds is written at exit (an exit handler captures
    /// nothing, so it finds the buffer here).
    private static let standardErrorBuffer: StandardErrorBuffer = {
        atexit { LogSink.standardErrorBuffer.flush() }
        return StandardErrorBuffer(droppedLine: Logger.droppedLine)
    }()

    func write(_ line: String) {
        lock.withLock { _ in writeLine(line) }
    }
}
