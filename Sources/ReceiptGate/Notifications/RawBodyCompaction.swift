import Foundation
import JSON
import OpenSSLCrypto

/// A store's raw notification body, kept compactly. A signed body (a JWS, as some stores sign
/// their notifications) carries the store's certificate chain in the header of every JWS it holds —
/// the notification's own and each signed transaction inside it, about 5 KB a copy — and every
/// notification carries the same chain. So each long JWS header is kept once, in
/// `raw_body_pieces` by its SHA-256, and the body as parts: text as it came, a kept piece, or a
/// base64url segment whose decoded text is parts again (how a JWS inside a JWS's payload is
/// reached). Expanding the parts gives the body back byte for byte; a body that would not come
/// back exactly, or would not be smaller, is kept as it came.
///
/// The parts are JSON: `["text", {"piece": "<sha-256 hex>"}, {"base64url": [parts]}]`.
enum RawBodyCompaction {
    /// `store_notifications.raw_format`: 0, the body as it came; 1, parts.
    static let verbatim: Int16 = 0
    static let parts: Int16 = 1
    /// Headers shorter than this, or without a certificate chain, stay in the body.
    static let minimumPiece = 256
    /// How deep a JWS inside a payload is looked for: a notification's transaction, not further.
    static let maximumDepth = 2

    struct Compacted {
        let stored: Data
        let format: Int16
        /// Each piece the parts name, by its SHA-256.
        let pieces: [Data: Data]
    }

    private enum Part {
        case text([UInt8])
        case piece(digest: Data)
        case base64url([Part])
    }

    static func compact(_ body: Data) -> Compacted {
        let bytes = [UInt8](body)
        guard String(validating: bytes, as: UTF8.self) != nil else {
            return Compacted(stored: body, format: verbatim, pieces: [:])
        }
        var pieces: [Data: Data] = [:]
        let found = split(bytes[...], depth: 0, pieces: &pieces)
        guard !pieces.isEmpty else { return Compacted(stored: body, format: verbatim, pieces: [:]) }
        var writer = JSONWriter(capacity: bytes.count / 2)
        write(found, into: &writer)
        let stored = writer.data
        // Kept as parts only when they come back exactly and take less room.
        guard stored.count < body.count, expand(stored, format: parts, piece: { pieces[$0] }) == body else {
            return Compacted(stored: body, format: verbatim, pieces: [:])
        }
        return Compacted(stored: stored, format: parts, pieces: pieces)
    }

    /// The body as it came; nil when a piece is missing or the parts are not parts.
    static func expand(_ stored: Data, format: Int16, piece: (Data) -> Data?) -> Data? {
        guard format == parts else { return stored }
        guard let list = JSONValue(parsing: stored)?.array else { return nil }
        var out: [UInt8] = []
        return append(list, to: &out, piece: piece) ? Data(out) : nil
    }

    /// The digests of the pieces stored parts name.
    static func digests(_ stored: Data, format: Int16) -> [Data] {
        guard format == parts, let list = JSONValue(parsing: stored)?.array else { return [] }
        var found: [Data] = []
        func walk(_ values: [JSONValue]) {
            for value in values {
                if let hex = value["piece"]?.string, let digest = Hex.decode(hex) { found.append(digest) }
                if let inner = value["base64url"]?.array { walk(inner) }
            }
        }
        walk(list)
        return found
    }

    // MARK: - Splitting

    /// `text` as parts: each JWS in it (three base64url segments joined by dots, the first a JSON
    /// object's) with a long header made a piece and, above the depth limit, its payload decoded.
    private static func split(_ text: ArraySlice<UInt8>, depth: Int, pieces: inout [Data: Data]) -> [Part] {
        var result: [Part] = []
        var literal: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            guard isSegmentByte(text[index]) else {
                literal.append(text[index])
                index += 1
                continue
            }
            var end = index
            while end < text.endIndex, isSegmentByte(text[end]) || text[end] == UInt8(ascii: ".") { end += 1 }
            let run = text[index..<end]
            // At most four parts: a run of many dots is not a JWS, and is not split into a slice each.
            let segments = run.split(separator: UInt8(ascii: "."), maxSplits: 3, omittingEmptySubsequences: false)
            if segments.count == 3, segments.allSatisfy({ !$0.isEmpty }), segments[0].starts(with: "eyJ".utf8) {
                if segments[0].count >= minimumPiece, carriesChain(segments[0]),
                    let header = try? SHA256.hash(Array(segments[0]))
                {
                    flush(&literal, into: &result)
                    pieces[header] = Data(segments[0])
                    result.append(.piece(digest: header))
                } else {
                    literal += segments[0]
                }
                literal.append(UInt8(ascii: "."))
                if depth < maximumDepth, let decoded = decodedExactly(segments[1]) {
                    flush(&literal, into: &result)
                    result.append(.base64url(split(decoded[...], depth: depth + 1, pieces: &pieces)))
                } else {
                    literal += segments[1]
                }
                literal.append(UInt8(ascii: "."))
                literal += segments[2]
            } else {
                literal += run
            }
            index = end
        }
        flush(&literal, into: &result)
        return result
    }

    /// Whether a JWS header is a signer's and nothing else: an algorithm, a type, a key id and a
    /// certificate chain (`x5c`, base64 certificates), what a store signs every notification
    /// with, the same until it rotates. Anything else in a body (a buyer's own text that looks
    /// like a JWS) stays in the body, so the pieces stay few.
    private static func carriesChain(_ header: ArraySlice<UInt8>) -> Bool {
        guard let decoded = Base64.urlDecode(bytes: Data(header)), let object = JSONValue(parsing: decoded)?.object,
            let chain = object["x5c"]?.array, !chain.isEmpty,
            Set(object.keys).isSubset(of: ["alg", "typ", "kid", "x5c"])
        else { return false }
        return chain.allSatisfy { entry in
            guard let text = entry.string, !text.isEmpty else { return false }
            return text.utf8.allSatisfy {
                isSegmentByte($0) || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "=")
            }
        }
    }

    /// A payload's decoded bytes, when they are UTF-8 text and encode back to the same segment.
    private static func decodedExactly(_ segment: ArraySlice<UInt8>) -> [UInt8]? {
        guard let decoded = Base64.urlDecode(bytes: Data(segment)), String(validating: decoded, as: UTF8.self) != nil,
            Base64.urlEncode(decoded).utf8.elementsEqual(segment)
        else { return nil }
        return [UInt8](decoded)
    }

    private static func flush(_ literal: inout [UInt8], into result: inout [Part]) {
        guard !literal.isEmpty else { return }
        result.append(.text(literal))
        literal = []
    }

    private static func isSegmentByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default: false
        }
    }

    // MARK: - Writing and expanding

    private static func write(_ list: [Part], into writer: inout JSONWriter) {
        writer.beginArray()
        for part in list {
            switch part {
            case .text(let bytes): writer.string(String(decoding: bytes, as: UTF8.self))
            case .piece(let digest):
                writer.beginObject()
                writer.key("piece")
                writer.string(Hex.encode(digest))
                writer.endObject()
            case .base64url(let inner):
                writer.beginObject()
                writer.key("base64url")
                write(inner, into: &writer)
                writer.endObject()
            }
        }
        writer.endArray()
    }

    private static func append(_ list: [JSONValue], to out: inout [UInt8], piece: (Data) -> Data?) -> Bool {
        for value in list {
            if let text = value.string {
                out += text.utf8
            } else if let hex = value["piece"]?.string {
                guard let digest = Hex.decode(hex), let found = piece(digest) else { return false }
                out += found
            } else if let inner = value["base64url"]?.array {
                var decoded: [UInt8] = []
                guard append(inner, to: &decoded, piece: piece) else { return false }
                out += Base64.urlEncode(decoded).utf8
            } else {
                return false
            }
        }
        return true
    }
}
