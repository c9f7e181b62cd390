public import Foundation

/// Structured logging: one JSON object per line, with `time`, `level`, `message` and dotted
/// metadata keys (`request.id`, `client.id`). A logger is a value passed to whoever needs it.
public struct Logger: Sendable {
    public enum Level: String, Sendable, Comparable, CaseIterable {
        case debug, info, warning, error

        public static func < (lhs: Level, rhs: Level) -> Bool {
            allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
        }
    }

    public let minimumLevel: Level
    public private(set) var metadata: [String: String]
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

    public func debug(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) { log(.debug, message(), fields) }
    public func info(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) { log(.info, message(), fields) }
    public func warning(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) { log(.warning, message(), fields) }
    public func error(_ message: @autoclosure () -> String, _ fields: [String: String] = [:]) { log(.error, message(), fields) }

    public func log(_ level: Level, _ message: @autoclosure () -> String, _ fields: [String: String] = [:]) {
        guard level >= minimumLevel else { return }
        var object = metadata.merging(fields) { _, new in new }
        object["time"] = Self.timestamp()
        object["level"] = level.rawValue
        object["message"] = message()
        sink.write(Self.encodeLine(object))
    }

    /// Sorted keys with time, level and message first, so lines read well by eye too.
    static func encodeLine(_ object: [String: String]) -> String {
        let leading = ["time", "level", "message"]
        let keys = leading.filter { object[$0] != nil } + object.keys.filter { !leading.contains($0) }.sorted()
        return "{" + keys.map { "\(jsonString($0)):\(jsonString(object[$0]!))" }.joined(separator: ",") + "}"
    }

    static func jsonString(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let c where c.value < 0x20 || c.value == 0x2028 || c.value == 0x2029:
                out += String(format: "\\u%04x", c.value)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }

    /// Said when lines had to be dropped because stderr did not keep up.
    static func droppedLine(_ count: Int) -> String {
        encodeLine(["time": timestamp(), "level": "warning", "message": "log lines dropped: stderr did not keep up", "count": String(count)]) + "\n"
    }

    static func timestamp() -> String { UTCTimestamp.milliseconds(Date()) }
}

/// Where log lines go. Whole lines are written under a lock so concurrent lines never interleave.
public final class LogSink: @unchecked Sendable {
    private let lock = NSLock()
    private let writeLine: (String) -> Void

    public init(_ writeLine: @escaping @Sendable (String) -> Void) {
        self.writeLine = writeLine
    }

    /// File descriptor 2, written off the caller's thread (`StandardErrorBuffer`).
    public static let standardError = LogSink { line in StandardErrorBuffer.shared.append(line) }

    func write(_ line: String) {
        lock.lock()
        defer { lock.unlock() }
        writeLine(line)
    }
}
