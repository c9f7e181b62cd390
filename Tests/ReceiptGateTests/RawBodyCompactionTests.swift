import Foundation
import OpenSSLCrypto
import Testing

@testable import ReceiptGate

/// A raw body kept as parts comes back byte for byte, and one that could not is kept as it came.
@Suite struct RawBodyCompactionTests {
    /// A JWS as compact serialization: a header with a long certificate chain, a payload, a signature.
    static func jws(payload: String, chain: String = String(repeating: "MIIB", count: 200)) -> String {
        let header = Base64.urlEncode(Data(#"{"alg":"ES256","x5c":["\#(chain)"]}"#.utf8))
        return header + "." + Base64.urlEncode(Data(payload.utf8)) + ".c2lnbmF0dXJl"
    }

    @Test func aJWSInsideAJWSKeepsItsChainOnceAndComesBackExactly() throws {
        let inner = Self.jws(payload: #"{"transactionId":"2000000111111111"}"#)
        let body = Data(
            #"{"signedPayload":"\#(Self.jws(payload: #"{"data":{"signedTransactionInfo":"\#(inner)"}}"#))"}"#.utf8)
        let compacted = RawBodyCompaction.compact(body)
        #expect(compacted.format == RawBodyCompaction.parts)
        #expect(compacted.pieces.count == 1, "the outer and the inner header are the same chain")
        #expect(compacted.stored.count * 2 < body.count)
        #expect(RawBodyCompaction.expand(compacted.stored, format: compacted.format) { compacted.pieces[$0] } == body)
        #expect(RawBodyCompaction.digests(compacted.stored, format: compacted.format).count == 2)
    }

    @Test func aPieceThatIsNotKeptIsNotGuessed() throws {
        let body = Data(#"{"signedPayload":"\#(Self.jws(payload: "{}"))"}"#.utf8)
        let compacted = RawBodyCompaction.compact(body)
        #expect(compacted.format == RawBodyCompaction.parts)
        #expect(RawBodyCompaction.expand(compacted.stored, format: compacted.format) { _ in nil } == nil)
    }

    @Test func bodiesWithNothingToShareAreKeptAsTheyCame() throws {
        let short = Data(#"{"signedPayload":"eyJhbGciOiJFUzI1NiJ9.eyJhIjoxfQ.c2ln"}"#.utf8)
        let plain = Data(#"{"message":{"data":"eyJ2ZXJzaW9uIjoiMS4wIn0="}}"#.utf8)
        let binary = Data([0xff, 0xfe, 0x00, 0x41])
        for body in [short, plain, binary, Data()] {
            let compacted = RawBodyCompaction.compact(body)
            #expect(
                compacted.format == RawBodyCompaction.verbatim && compacted.stored == body && compacted.pieces.isEmpty)
            #expect(RawBodyCompaction.expand(compacted.stored, format: compacted.format) { _ in nil } == body)
        }
    }

    @Test func onlyACertificateChainIsKeptApart() throws {
        // A long header with no chain (a key id and claims) is as likely to be one body's own.
        let header = Base64.urlEncode(Data(#"{"alg":"ES256","kid":"\#(String(repeating: "k", count: 300))"}"#.utf8))
        let body = Data(#"{"signedPayload":"\#(header).e30.c2ln"}"#.utf8)
        let compacted = RawBodyCompaction.compact(body)
        #expect(compacted.pieces.isEmpty && compacted.format == RawBodyCompaction.verbatim)
    }

    @Test func aHeaderWithMoreThanASignersFieldsStaysInTheBody() throws {
        // A buyer's own text shaped like a signed header (a chain and a claim of its own).
        let header = Base64.urlEncode(
            Data(#"{"alg":"ES256","x5c":["\#(String(repeating: "MIIB", count: 100))"],"sub":"mine"}"#.utf8))
        let dots = String(repeating: ".", count: 10_000)
        let body = Data(#"{"name":"\#(header).e30.c2ln","note":"a\#(dots)b"}"#.utf8)
        let compacted = RawBodyCompaction.compact(body)
        #expect(compacted.pieces.isEmpty && compacted.stored == body)
    }

    @Test func aPayloadThatWouldNotEncodeBackTheSameStaysAsItCame() throws {
        // "e30" decodes to "{}"; "e31" has stray low bits and decodes to the same bytes, so it is
        // left as it came while the header is still kept once.
        var text = Self.jws(payload: "{}")
        text = text.replacingOccurrences(of: ".e30.", with: ".e31.")
        let body = Data(#"{"signedPayload":"\#(text)"}"#.utf8)
        let compacted = RawBodyCompaction.compact(body)
        #expect(compacted.format == RawBodyCompaction.parts)
        #expect(RawBodyCompaction.expand(compacted.stored, format: compacted.format) { compacted.pieces[$0] } == body)
    }
}
