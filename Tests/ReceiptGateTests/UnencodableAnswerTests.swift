import Foundation
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// Over a real socket: a handler whose answer cannot be encoded gives the client a 500 with a
/// stable code, not a 200 with `{}`, and the operator a log line saying why.
@Suite struct UnencodableAnswer {
    struct Broken: DialectProvider {
        let name = "broken"
        func routes(core: any DialectCore) -> [Route] {
            [Route("GET", "/broken/ratio", authentication: .none) { _, _ in .json(["ratio": Double.nan]) }]
        }
        func render(_ refusal: RouteRefusal) -> RouteResponse { .json(["error": refusal.code.rawValue], status: 400) }
    }

    @Test func theClientGetsA500AndTheLogSaysWhy() async throws {
        let harness = try await VerifyHarness.start(dialects: [Broken()])
        defer { harness.stop() }
        let response = try await RawHTTP.request(port: harness.service.port, path: "/broken/ratio")
        #expect(response.status == 500)
        #expect(try response.json()["error"] as? String == "INTERNAL_ERROR")
        let logged = harness.log.captured.filter { $0.contains("the handler's answer could not be sent") }
        #expect(logged.count == 1)
        #expect(logged.first?.contains("GET /broken/ratio") == true)
    }
}
