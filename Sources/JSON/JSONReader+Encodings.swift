public import Foundation

extension JSONReader {
    /// A document `withDocument` refuses as UTF-16 or UTF-32, transcoded to UTF-8 as JSONDecoder
    /// transcodes one before reading it (its byte order mark dropped). Nil if the document is
    /// UTF-8 already, if its bytes are not text in the encoding they announce, or if what comes
    /// out starts with what JSONDecoder reads as it is and refuses but `withDocument` would take
    /// for an encoding's mark (a NUL, a second byte order mark): JSON in none of these cases.
    public static func transcodedToUTF8(_ data: Data) -> Data? {
        guard let (encoding, markLength) = wideEncoding(first4: data),
            let text = String(data: data.dropFirst(markLength), encoding: encoding)
        else { return nil }
        let utf8 = Data(text.utf8)
        guard wideEncoding(first4: utf8) == nil, !utf8.starts(with: [0xEF, 0xBB, 0xBF]) else { return nil }
        return utf8
    }

    private static func wideEncoding(first4 data: Data) -> (String.Encoding, Int)? {
        let head = Array(data.prefix(4))
        return wideEncoding(
            head.count > 0 ? head[0] : nil, head.count > 1 ? head[1] : nil,
            head.count > 2 ? head[2] : nil, head.count > 3 ? head[3] : nil)
    }

    /// The encoding and byte order mark length that JSONDecoder's detection (RFC 4627 section 3,
    /// with its marks) finds in the first four bytes (nil past the end), when it is not UTF-8.
    static func wideEncoding(_ b0: UInt8?, _ b1: UInt8?, _ b2: UInt8?, _ b3: UInt8?) -> (String.Encoding, Int)? {
        switch (b0, b1, b2, b3) {
        case (0, 0, 0xFE, 0xFF): return (.utf32BigEndian, 4)
        case (0xFF, 0xFE, 0, 0): return (.utf32LittleEndian, 4)
        case (0xFE, 0xFF, _, _): return (.utf16BigEndian, 2)
        case (0xFF, 0xFE, _, _): return (.utf16LittleEndian, 2)
        case (0, 0, 0, .some(let b)) where b != 0: return (.utf32BigEndian, 0)
        case (0, .some(let b), 0, .some(let c)) where b != 0 && c != 0: return (.utf16BigEndian, 0)
        case (.some(let b), 0, 0, 0) where b != 0: return (.utf32LittleEndian, 0)
        case (.some(let b), 0, .some(let c), 0) where b != 0 && c != 0: return (.utf16LittleEndian, 0)
        case (0, .some(let b), nil, nil) where b != 0: return (.utf16BigEndian, 0)
        case (.some(let b), 0, nil, nil) where b != 0: return (.utf16LittleEndian, 0)
        default: return nil
        }
    }
}
