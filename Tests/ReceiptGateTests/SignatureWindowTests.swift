import Foundation
import Postgres
import Testing

@testable import ReceiptGate

/// A signed request is good for 300 s either side of the server's clock, judged by the clock the
/// authenticator is given: the edges are checked to the second, and no test waits on a real clock
/// or leaves a margin for a slow machine.
@Suite struct SignatureWindow {
    static let now = Date(timeIntervalSince1970: 1_764_547_200)
    static let outside = "X-Timestamp is more than 300 seconds from the server's clock"

    /// Well-formed signature headers stamped `stamp` (the signature itself is never reached), by
    /// lower-cased name as the server hands them to authentication.
    static func headers(stampedAt stamp: Int) -> [String: String] {
        ["x-client-id": "rgc_test", "x-timestamp": String(stamp), "x-signature": String(repeating: "ab", count: 32)]
    }

    static func problem(stampedAt stamp: Int) -> String? {
        let fields = headers(stampedAt: stamp)
        return ClientAuthentication.headerProblem(header: { fields[$0] }, now: now)
    }

    @Test(arguments: [-300, -1, 0, 1, 300])
    func aTimestampWithinFiveMinutesIsAccepted(offset: Int) {
        #expect(Self.problem(stampedAt: 1_764_547_200 + offset) == nil)
    }

    @Test(arguments: [-301, 301, -86_400, 86_400])
    func aTimestampFurtherOffIsRefused(offset: Int) {
        #expect(Self.problem(stampedAt: 1_764_547_200 + offset) == Self.outside)
    }

    /// `authenticate` judges by its own clock: a request stamped now is refused by an authenticator
    /// whose clock is ten minutes ahead, before any client is looked up (there is no database here).
    @Test func authenticationJudgesByItsClock() async {
        let clients = ClientRepository(
            pool: PostgresPool(.init(connectionString: "host=/nonexistent", size: 1)),
            secrets: SecretBox(masterKey: Data(repeating: 1, count: 32)))
        let ahead = ClientAuthentication(
            directory: DatabaseClientDirectory(repository: clients), now: { Date().addingTimeInterval(600) })
        let fields = Self.headers(stampedAt: Int(Date().timeIntervalSince1970))
        let refusal = await #expect(throws: AuthenticationRefused.self) {
            try await ahead.authenticate(header: { fields[$0] }, body: Data())
        }
        #expect(refusal?.message == Self.outside)
    }
}
