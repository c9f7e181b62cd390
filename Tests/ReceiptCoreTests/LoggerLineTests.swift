import Foundation
import TestSupport
import Testing

@testable import ReceiptCore

/// A log line is one JSON object whichever bytes a caller's values hold: the fast path that copies
/// a plain value whole and the escaping path must both give back exactly what went in.
@Suite struct LoggerLineTests {
    static let awkward: [String] = [
        "", "plain-request-id", "say \"hi\"", "back\\slash", "line\nbreak\r\ttab", "\u{0}\u{1}\u{1f}",
        "line\u{2028}separator", "para\u{2029}graph", "euro € sign", "\u{E2}", "emoji 🎮 ok", "/v1/verify?x=1",
    ]

    @Test func everyValueRoundTripsThroughJSON() throws {
        var random = SeededRandom()
        var values = Self.awkward
        let alphabet = Array("ab\"\\\n\u{7}€\u{2028}/ 9".unicodeScalars)
        for _ in 0..<500 {
            let length = Int.random(in: 0...24, using: &random)
            values.append(
                String(
                    String.UnicodeScalarView(
                        (0..<length).map { _ in alphabet[Int.random(in: 0..<alphabet.count, using: &random)] })))
        }
        let replay = random.replay
        for value in values {
            let line = Logger.line(
                time: "t", level: "info", message: value, metadata: ["request.id": value], fields: ["path": value])
            #expect(
                !line.contains("\n") && !line.contains("\u{2028}") && !line.contains("\u{2029}"),
                "one line: \(line) (\(replay))")
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String], "\(line) (\(replay))")
            #expect(
                object == ["time": "t", "level": "info", "message": value, "request.id": value, "path": value],
                "\(replay)")
        }
    }

    @Test func aPlainValueIsCopiedAsIs() {
        #expect(
            Logger.line(time: nil, level: nil, message: "ok", metadata: [:], fields: ["a.b": "x-1/2"])
                == #"{"message":"ok","a.b":"x-1/2"}"#)
    }
}

@Suite struct LoggerPairs {
    /// Pairs write the very line a dictionary of the same fields writes: sorted keys, a field
    /// overriding metadata of its name, the logger's own time/level/message kept.
    @Test func pairsAndDictionaryWriteTheSameLine() {
        let metadata = ["service": "rg", "request.id": "from-metadata", "zone": "z"]
        let pairs = [
            ("request.id", "r-1"), ("http.status", "200"), ("duration_ms", "1.250"), ("message", "ignored"),
            ("a", "\"q\""),
        ]
        let fromPairs = Logger.line(time: "t", level: "info", message: "request", metadata: metadata, pairs: pairs)
        let fromDictionary = Logger.line(
            time: "t", level: "info", message: "request", metadata: metadata,
            fields: Dictionary(uniqueKeysWithValues: pairs))
        #expect(fromPairs == fromDictionary)
        #expect(
            fromPairs
                == #"{"time":"t","level":"info","message":"request","a":"\"q\"","duration_ms":"1.250","http.status":"200","request.id":"r-1","service":"rg","zone":"z"}"#
        )
    }
}

/// What a logger writes to its sink: lines below its level are dropped, and each line is one JSON
/// object with time, level and message first, a field overriding metadata of its name, and line
/// separators escaped so that one entry is one line.
@Suite struct LoggerOutput {
    @Test func aLoggerWritesOneEscapedJSONObjectPerEntryAtOrAboveItsLevel() throws {
        let lines = LockedBox<[String]>([])
        let logger = Logger(
            minimumLevel: .info, sink: LogSink { line in lines.update { $0.append(line) } },
            metadata: ["a": "meta", "z": "kept"]
        )
        .with("request.id", "r-1")
        logger.debug("hidden")
        logger.info("one\u{2028}two é \"q\"\nnext", ["a": "field", "b": "\u{7}"])
        #expect(lines.get().count == 1, "a debug line passed an info logger: \(lines.get())")
        let line = try #require(lines.get().first)
        #expect(line.hasPrefix("{\"time\":\""))
        #expect(
            line.contains(
                #""level":"info","message":"one\u2028two é \"q\"\nnext","a":"field","b":"\u0007","request.id":"r-1","z":"kept"}"#
            ), "\(line)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String])
        #expect(object["message"] == "one\u{2028}two é \"q\"\nnext")
        #expect(object["time"]?.hasSuffix("Z") == true)
    }
}
