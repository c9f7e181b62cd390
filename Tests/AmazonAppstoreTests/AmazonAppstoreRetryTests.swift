import AmazonAppstore
import AmazonAppstoreTestSupport
import Foundation
import ReceiptCore
import Testing

/// RVS trouble: 410, 429 and 5xx are tried again with back-off, never past the request's deadline.
@Suite struct AmazonAppstoreRetry {
    typealias Verify = AmazonAppstoreVerify

    @Test(arguments: [410, 429, 500, 503])
    func aTransientAnswerIsTriedAgainAndThenSucceeds(status: Int) async throws {
        let rvs = try FakeRVS()
        try rvs.addReceipt("r-1", userID: Verify.user)
        rvs.state.failuresFirst.set([status, status])
        let purchase = try await Verify.provider(rvs).verify(
            receiptID: "r-1", userID: Verify.user, context: Verify.context(environments: [.production]))
        #expect(purchase.first?.transactionID == "r-1")
        #expect(rvs.hits.count == 3)
        await rvs.shutdown()
    }

    /// With a second left of the request's deadline, a transient answer is not tried again.
    @Test func aVerifyWithOneSecondLeftMakesNoSecondAttempt() async throws {
        let rvs = try FakeRVS()
        try rvs.addReceipt("r-1", userID: Verify.user)
        rvs.state.failuresFirst.set([503])
        var context = Verify.context(environments: [.production])
        context.deadline = .now + .seconds(1)
        let error = await Verify.refusal {
            _ = try await Verify.provider(rvs).verify(receiptID: "r-1", userID: Verify.user, context: context)
        }
        #expect(error?.isRetryable == true && error?.reason == "AMAZON_UNAVAILABLE", "\(String(describing: error))")
        #expect(rvs.hits.count == 1)
        await rvs.shutdown()
    }

    @Test(arguments: [410, 429, 502])
    func aPersistentlyTransientRVSIsARetryableVerifierErrorAfterThreeAttempts(status: Int) async throws {
        let rvs = try FakeRVS()
        rvs.state.alwaysStatus.set(status)
        let error = await Verify.refusal {
            _ = try await Verify.provider(rvs).verify(
                receiptID: "r-1", userID: Verify.user, context: Verify.context(environments: [.production]))
        }
        #expect(error?.code == .verifierError && error?.isRetryable == true && error?.reason == "AMAZON_UNAVAILABLE")
        #expect(rvs.hits.count == 3)
        #expect(
            error.map { !$0.description.contains(FakeRVS.sharedSecret) && !$0.description.contains("/developer/") }
                == true)
        await rvs.shutdown()
    }

    @Test func noAttemptStartsOrWaitsPastTheDeadline() async throws {
        let rvs = try FakeRVS()
        rvs.state.alwaysStatus.set(503)
        // A thousand attempts allowed and back-off of 10 to 40 ms (about 25 s in all): only the deadline stops this early.
        let provider = try Verify.provider(rvs, attempts: 1_000)
        let deadline = ContinuousClock.now + .milliseconds(500)
        let error = await Verify.refusal {
            _ = try await provider.verify(
                receiptID: "r-1", userID: Verify.user,
                context: Verify.context(environments: [.production], deadline: deadline))
        }
        #expect(error?.code == .verifierError && error?.isRetryable == true)
        // Without the deadline the policy makes its thousand attempts. Counted in attempts: at most
        // about 50 fit in 0.5 s of 10 ms back-offs (a stalled machine makes fewer, never more).
        let attempts = rvs.hits.count
        #expect(attempts >= 1 && attempts < 100)
        // A deadline already past makes no call at all.
        let late = await Verify.refusal {
            _ = try await provider.verify(
                receiptID: "r-1", userID: Verify.user,
                context: Verify.context(environments: [.production], deadline: .now - .seconds(1)))
        }
        #expect(late?.isRetryable == true && rvs.hits.count == attempts)
        await rvs.shutdown()
    }

    @Test func aLongRetryAfterEndsTheRetriesAtOnce() async throws {
        let rvs = try FakeRVS()
        rvs.state.alwaysStatus.set(429)
        rvs.state.retryAfter.set("3600")
        let error = await Verify.refusal {
            _ = try await Verify.provider(rvs).verify(
                receiptID: "r-1", userID: Verify.user, context: Verify.context(environments: [.production]))
        }
        #expect(error?.isRetryable == true && rvs.hits.count == 1)
        await rvs.shutdown()
    }
}
