import Foundation
import HiveAxyl
import PluginTestSupport
import ReceiptCore
import Testing

/// A secret accepted a moment before the client is rotated or disabled must not still buy a
/// token. The fake core changes the client in the gap between the secret's check and the token's
/// issue, a gap real traffic only hits by chance.
@Suite struct HiveAxylTokenAfterAChange {
    enum Change: String, CaseIterable, Sendable { case rotated, disabled }

    @Test(arguments: Change.allCases) func aClientChangedAfterItsSecretWasCheckedGetsNoToken(
        change: Change
    ) async throws {
        let core = Fixture.core()
        core.afterAuthentication = { [weak core] clientID in
            switch change {
            case .rotated: core?.rotateSecret(of: clientID, to: "rgs_rotated")
            case .disabled: core?.disable(clientID)
            }
        }
        let answer = await HiveAxylTokenEndpoint.request(
            core, body: "grant_type=client_credentials", basic: (Fixture.client.clientID, Fixture.secret))
        // The same answer as a wrong secret, challenge included.
        #expect(answer.status == 401, "\(String(decoding: answer.body, as: UTF8.self))")
        #expect(answer.object["error"] as? String == "invalid_client")
        #expect(answer.header("WWW-Authenticate")?.hasPrefix("Basic") == true)
        #expect(answer.object["access_token"] == nil)
        #expect(core.memoryTokens.storedDigests.isEmpty)
    }

    /// The check costs nothing when nothing changed: the same core without the change issues.
    @Test func anUnchangedClientStillGetsItsToken() async throws {
        let core = Fixture.core()
        core.afterAuthentication = { _ in }
        let answer = await HiveAxylTokenEndpoint.request(
            core, body: "grant_type=client_credentials", basic: (Fixture.client.clientID, Fixture.secret))
        #expect(answer.status == 200)
        #expect(core.memoryTokens.storedDigests.count == 1)
    }
}
