import AppStore
import AppStoreTestSupport
import Foundation
import TestSupport
import Testing

/// With online checks on, our verdict and Apple's library's agree on chains whose certificates
/// were valid when the token was signed but not now, and the other way round: both then judge
/// validity now and ask the same OCSP responders (`openssl ocsp` on loopback).
@Suite(.serialized) struct OnlineDifferentialAgainstApplesLibrary {
    struct Scenario {
        let id: String
        var leafValidFrom: TimeInterval? = nil
        var leafValidUntil: TimeInterval? = nil
        /// When the token says it was signed, from now.
        var signedAgo: TimeInterval = 0
        var leafRevoked = false
        /// The verdict without online checks, to show the scenario tells the two rules apart.
        var offlineAccepts: Bool? = nil
    }

    static let day: TimeInterval = 86_400

    static let scenarios = [
        Scenario(id: "online-valid"),
        Scenario(
            id: "online-leaf-expired-since-signing", leafValidFrom: -30 * day, leafValidUntil: -day, signedAgo: 2 * day,
            offlineAccepts: true),
        Scenario(
            id: "online-leaf-valid-now-not-at-signing", leafValidFrom: -day, signedAgo: 2 * day, offlineAccepts: false),
        Scenario(id: "online-leaf-revoked", leafRevoked: true),
    ]

    @Test(
        .enabled(
            if: DifferentialAgainstApplesLibrary.oraclePython != nil
                || ProcessInfo.processInfo.environment["CI"] != nil,
            "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to run Apple's library as the oracle"))
    func onlineVerdictsMatchApplesLibrary() async throws {
        var accepted = 0
        for scenario in Self.scenarios {
            var options = AppleTestPKI.Options()
            options.leafValidFrom = scenario.leafValidFrom.map { Date(timeIntervalSinceNow: $0) }
            options.leafValidUntil = scenario.leafValidUntil.map { Date(timeIntervalSinceNow: $0) }
            var responders = try OnlineRevocationChecks.Responders(options)
            let signed = Int64((Date().timeIntervalSince1970 - scenario.signedAgo) * 1000)
            let token = try responders.pki.sign(
                AppleTestPKI.transaction(["signedDate": signed, "purchaseDate": signed - 60_000]))
            try await responders.start(leafRevoked: scenario.leafRevoked)
            defer {
                Task { [responders] in
                    var stopping = responders; try? await stopping.stop()
                }
            }

            let ours: Bool
            do {
                _ = try await responders.provider().verifyTransaction(token, expecting: OnlineRevocationChecks.sandbox)
                ours = true
            } catch {
                ours = false
            }
            let testCase = DifferentialAgainstApplesLibrary.Case(
                id: scenario.id, kind: "transaction", token: token, root: responders.pki.root,
                bundleID: "com.example.game", environment: .sandbox, appAppleID: nil,
                online: true)
            let theirs = try #require(
                try await DifferentialAgainstApplesLibrary.oracleVerdicts([testCase])[scenario.id],
                "the oracle judged nothing for \(scenario.id)")
            #expect(
                ours == theirs.accepted,
                "\(scenario.id): ReceiptGate \(ours ? "accepts" : "rejects"), Apple's library \(theirs.accepted ? "accepts" : "rejects") (\(theirs.status))"
            )
            if let offlineAccepts = scenario.offlineAccepts {
                var offline = testCase
                offline.online = false
                #expect(
                    DifferentialAgainstApplesLibrary.ourVerdict(offline) == offlineAccepts,
                    "\(scenario.id) without online checks")
                #expect(
                    ours != offlineAccepts, "\(scenario.id): online checks judge the certificates now, not at signing")
            }
            if ours { accepted += 1 }
            try await responders.stop()
        }
        #expect(accepted == 2, "the valid chain and the one valid now pass; the others fail")
    }
}
