import AppStoreTestSupport
import Foundation
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A signed verification reads its client once, when the signature is checked: proving and
/// recording use that read (the record's statement still checks its version). With the client
/// cache switched off every lookup is a database round trip, so each one a request saves is one
/// the database does not serve.
@Suite struct ClientLookups {
    /// Counts the lookups that reach the directory the service picked.
    final class CountingDirectory: ClientDirectory, @unchecked Sendable {
        private let lock = NSLock()
        private var base: (any ClientDirectory)?
        private var counted = 0

        func wrap(_ directory: any ClientDirectory) -> any ClientDirectory {
            lock.withLock { base = directory }
            return self
        }

        func entry(for clientID: String) async throws -> AuthenticatedClient? {
            let base = lock.withLock { () -> (any ClientDirectory)? in
                counted += 1
                return self.base
            }
            return try await base?.entry(for: clientID)
        }

        func invalidate(_ clientID: String) { lock.withLock { base }?.invalidate(clientID) }

        var lookups: Int { lock.withLock { counted } }
    }

    @Test(arguments: [0, 5]) func aSignedVerificationLooksItsClientUpOnce(cacheSeconds: Int) async throws {
        let counter = CountingDirectory()
        let harness = try await VerifyHarness.start(
            configure: { $0.clientCacheSeconds = cacheSeconds },
            beforeStart: { $0.wrapClientDirectory = { counter.wrap($0) } })
        defer { harness.stop() }

        for (index, transactionID) in ["2000000111110001", "2000000111110002"].enumerated() {
            let receipt = try harness.pki.sign(AppleTestPKI.transaction(["transactionId": transactionID]))
            let answer = try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt])
            #expect(answer.status == 200, "\(answer.text)")
            #expect(try answer.json()["status"] as? String == "verified")
            #expect(counter.lookups == index + 1, "lookups after \(index + 1) verifications")
        }
        #expect(try await harness.count("transactions") == 2)
    }
}
