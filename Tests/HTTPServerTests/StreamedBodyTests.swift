import Foundation
import HTTPServer
import Synchronization
import TestSupport
import Testing

/// A streamed response body: sent as it is written, never more than the buffer ahead of the
/// client; cut short (no last chunk) when its producer fails; stopped when the client goes away.
@Suite struct StreamedBody {
    /// `pieces` numbered lines written one by one, on a thread of their own (writes block).
    static func numbered(
        _ pieces: Int, failingAfter failure: Int? = nil, written: Tally? = nil
    )
        -> HTTPBodyStream.Producer
    {
        { stream in
            try await onOwnThread {
                for piece in 0..<pieces {
                    if piece == failure { throw RawHTTP.Failure(description: "the producer failed") }
                    try stream.write("line \(piece) " + String(repeating: "x", count: 100) + "\n")
                    written?.add(1)
                }
            }
        }
    }

    static func router(_ producer: @escaping HTTPBodyStream.Producer) -> Router {
        var router = Router()
        router.get("/stream") { _ in
            var response = HTTPResponse(status: 200, headers: ["Content-Type": "text/plain"])
            response.stream = HTTPBodyStream(bufferLimit: 4_096, produce: producer)
            return response
        }
        return router
    }

    @Test func aBodyManyTimesTheBufferArrivesWholeAndChunked() async throws {
        let server = try startTestServer(Self.router(Self.numbered(20_000)))
        let response = try await RawHTTP.request(port: server.port, path: "/stream")
        #expect(response.status == 200 && response.headers["transfer-encoding"]?.lowercased() == "chunked")
        let lines = response.text.split(separator: "\n")
        #expect(lines.count == 20_000)
        #expect(lines.enumerated().allSatisfy { $0.element.hasPrefix("line \($0.offset) ") })
        let head = try await RawHTTP.request(port: server.port, method: "HEAD", path: "/stream")
        #expect(head.status == 200 && head.body.isEmpty)
        await server.shutdown()
    }

    @Test func aFailingProducerCutsTheBodyShort() async throws {
        let server = try startTestServer(Self.router(Self.numbered(20_000, failingAfter: 5_000)))
        let ending = try await RawHTTP.ending(
            port: server.port, pieces: [Data("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n".utf8)])
        guard case .closedByServer(let received) = ending else {
            Issue.record("the connection stayed open")
            return
        }
        let text = String(decoding: received, as: UTF8.self)
        #expect(text.contains("line 4999 ") && !text.contains("line 5000 "))
        #expect(!text.hasSuffix("\r\n0\r\n\r\n"), "a cut body must not end as a complete chunked body")
        await server.shutdown()
    }

    @Test func aClientThatGoesAwayStopsTheProducer() async throws {
        let written = Tally(), stopped = Tally()
        let producer: HTTPBodyStream.Producer = { stream in
            do {
                try await Self.numbered(10_000_000, written: written)(stream)
            } catch is HTTPBodyStream.Cancelled {
                stopped.add(1)
            }
        }
        let server = try startTestServer(Self.router(producer))
        try await onOwnThread {
            let connection = try RawConnection(port: server.port)
            connection.send(Data("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            _ = connection.becomesReadable(within: 10_000)
        }  // closed here, a few bytes read
        #expect(await eventually { stopped.value == 1 }, "the producer was not stopped")
        #expect(written.value < 10_000_000)
        await server.shutdown()
    }
}

/// A count shared with a producer's thread.
final class Tally: Sendable {
    private let count = Mutex(0)
    func add(_ amount: Int) { count.withLock { $0 += amount } }
    var value: Int { count.withLock { $0 } }
}
