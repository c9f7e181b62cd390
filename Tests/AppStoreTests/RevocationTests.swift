import AppStoreTestSupport
import Foundation
import HTTPClient
import OpenSSLCrypto
import TestSupport
import Testing

@testable import AppStore

/// Online revocation checks against real OCSP responders on loopback (`openssl ocsp`), one per
/// issuing CA, as Apple runs them.
@Suite(.serialized) struct OnlineRevocationChecks {
    struct Responders {
        let pki: AppleTestPKI
        let directory: URL
        let leafPort: Int, intermediatePort: Int
        var processes: [ChildProcess] = []

        init(_ base: AppleTestPKI.Options = AppleTestPKI.Options()) throws {
            leafPort = try RawHTTP.freePort()
            intermediatePort = try RawHTTP.freePort()
            var options = base
            options.leafOCSPURL = "http://127.0.0.1:\(leafPort)"
            options.intermediateOCSPURL = "http://127.0.0.1:\(intermediatePort)"
            pki = try AppleTestPKI(options)
            directory = TestDatabase.temporaryDirectory("ocsp")
            for (name, certificate, key) in [
                ("root", pki.root, pki.rootKey), ("intermediate", pki.intermediate, pki.intermediateKey),
            ] {
                try pem(certificate).write(
                    to: directory.appendingPathComponent("\(name).pem"), atomically: true, encoding: .utf8)
                try key.pemRepresentation().write(
                    to: directory.appendingPathComponent("\(name).key"), atomically: true, encoding: .utf8)
            }
        }

        func pem(_ certificate: Certificate) -> String {
            "-----BEGIN CERTIFICATE-----\n"
                + certificate.derEncoded.base64EncodedString(options: .lineLength64Characters)
                + "\n-----END CERTIFICATE-----\n"
        }

        /// Starts both responders; `leafRevoked` marks the leaf revoked in its CA's database.
        mutating func start(leafRevoked: Bool = false) async throws {
            let leafLine =
                leafRevoked
                ? "R\t301231235959Z\t240101000000Z\t03\tunknown\t/CN=Test App Store Signing\n"
                : "V\t301231235959Z\t\t03\tunknown\t/CN=Test App Store Signing\n"
            try leafLine.write(
                to: directory.appendingPathComponent("leaf-index.txt"), atomically: true, encoding: .utf8)
            try "V\t301231235959Z\t\t02\tunknown\t/CN=Test WWDR Intermediate\n"
                .write(
                    to: directory.appendingPathComponent("intermediate-index.txt"), atomically: true, encoding: .utf8)
            for (port, index, ca) in [
                (leafPort, "leaf-index.txt", "intermediate"), (intermediatePort, "intermediate-index.txt", "root"),
            ] {
                let process = try ChildProcess.launch(
                    "/usr/bin/openssl",
                    [
                        "ocsp", "-index", directory.appendingPathComponent(index).path, "-port", "\(port)",
                        "-rsigner", directory.appendingPathComponent("\(ca).pem").path, "-rkey",
                        directory.appendingPathComponent("\(ca).key").path,
                        "-CA", directory.appendingPathComponent("\(ca).pem").path, "-nmin", "5",
                        // Named by key hash: Apple's library finds the signer only that way.
                        "-resp_key_id",
                    ], environment: ["PATH": "/usr/bin:/bin"])
                processes.append(process)
                // Wait for its "ACCEPT" line rather than probing the port: `openssl ocsp` serves one
                // connection at a time and stalls on a probe that sends nothing. A loaded CI machine
                // can take seconds to start it; one that never starts fails here, saying why, rather
                // than later as an "unreachable responder" the test would blame on the checker.
                for _ in 0..<400 where !(process.stdout + process.stderr).contains("ACCEPT") {
                    try await Task.sleep(for: .milliseconds(50))
                }
                guard (process.stdout + process.stderr).contains("ACCEPT") else {
                    throw ResponderDidNotStart(port: port, output: process.stdout + process.stderr)
                }
            }
        }

        struct ResponderDidNotStart: Error { let port: Int, output: String }

        mutating func stop() async throws {
            for process in processes {
                process.send(SIGKILL)
                _ = try await process.wait(timeout: .seconds(10))
            }
            processes = []
        }

        func provider() -> AppStoreProvider {
            let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root], onlineChecks: true)
            return AppStoreProvider(
                verifier: verifier,
                revocation: AppleRevocationChecker(http: HTTPClientForTests.fast(), trustRoots: [pki.root]))
        }
    }

    static let sandbox = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox])

    @Test func goodChainsPassRevokedOnesFailAndOutagesAreRetryable() async throws {
        var responders = try Responders()
        let token = try responders.pki.sign(AppleTestPKI.transaction())
        try await responders.start()
        #expect(
            try await responders.provider().verifyTransaction(token, expecting: Self.sandbox).transactionId
                == "2000000111111111")
        try await responders.stop()

        try await responders.start(leafRevoked: true)
        await expectAsyncRejection(.certificateRevoked) {
            _ = try await responders.provider().verifyTransaction(token, expecting: Self.sandbox)
        }
        try await responders.stop()

        // Nobody answers: not an acceptance, and not a final refusal either.
        do {
            _ = try await responders.provider().verifyTransaction(token, expecting: Self.sandbox)
            Issue.record("accepted with no OCSP responder reachable")
        } catch {
            #expect(error.reason == .revocationCheckUnavailable)
            #expect(error.isRetryable)
            #expect(error.errorCode == .verifierError)
        }
    }

    @Test func aGoodAnswerIsRememberedUntilItsLifetimeEndsByTheInjectedClock() async throws {
        var responders = try Responders()
        let token = try responders.pki.sign(AppleTestPKI.transaction())
        let clock = LockedBox(Date(timeIntervalSince1970: 1_800_000_000))
        let checker = AppleRevocationChecker(
            http: HTTPClientForTests.fast(), trustRoots: [responders.pki.root], lifetime: 60, now: { clock.get() })
        let provider = AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(trustRoots: [responders.pki.root], onlineChecks: true),
            revocation: checker)
        try await responders.start()
        _ = try await provider.verifyTransaction(token, expecting: Self.sandbox)
        try await responders.stop()
        // The responders are gone: the chain's good answer still answers within its lifetime.
        clock.set(clock.get().addingTimeInterval(59))
        _ = try await provider.verifyTransaction(token, expecting: Self.sandbox)
        #expect(await checker.checks == 1)
        // Its lifetime over, the chain is asked about again, and nobody answers.
        clock.set(clock.get().addingTimeInterval(2))
        await expectAsyncRejection(.revocationCheckUnavailable) {
            _ = try await provider.verifyTransaction(token, expecting: Self.sandbox)
        }
        #expect(await checker.checks == 2)
    }

    @Test func offByDefault() throws {
        #expect(try AppStoreProvider.fromEnvironment([:]).revocation == nil)
        #expect(try AppStoreProvider.fromEnvironment(["RECEIPTGATE_APPLE_ONLINE_CHECKS": "on"]).revocation != nil)
    }
}
