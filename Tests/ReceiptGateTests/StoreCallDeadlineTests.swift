import Foundation
import TestSupport
import Testing

/// A verification's store calls end before the request's own deadline, so a slow store is
/// answered as the store's trouble (retryable, with the store's error) instead of by the
/// server's last-resort timeout, and no store call outlives the request that made it.
@Suite struct StoreCallDeadline {
    @Test func aSlowStoreIsAnsweredAsTheStoresTroubleBeforeTheRequestTimesOut() async throws {
        let harness = try await AmazonAppstoreHarness.start(requestTimeoutSeconds: 20)
        defer { harness.stop() }
        try harness.rvs.addReceipt("r-slow", userID: AmazonAppstoreEndToEnd.user)
        // Longer than the request may take: only a deadline on the store call ends it in time.
        // (Still less than the fake's own handler deadline, so it has answered before it shuts down.)
        harness.rvs.state.answerDelay.set(.seconds(25))
        let answer = try await harness.verify("r-slow")
        // The store's trouble as the API documents it, not the server's last-resort timeout.
        #expect(answer.status == 502, "\(answer.text)")
        #expect(try answer.json()["error"] as? String == "VERIFIER_ERROR")
        #expect((try answer.json()["message"] as? String)?.contains("AMAZON_UNAVAILABLE") == true)
        // Asked once: no retry was started that could not finish within the request.
        #expect(harness.rvs.hits.count == 1)
    }
}
