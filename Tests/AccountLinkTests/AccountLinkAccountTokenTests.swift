import AccountLink
import AppStore
import Foundation
import PluginTestSupport
import ReceiptCore
import Testing

/// The dialect asks the core to have a linked purchase's store told the account's token; what
/// the core queues (and when it queues nothing) is the one rule `AccountTokenAssignment.owed`.
@Suite struct AccountLinkAccountTokenTests {
    static func queued(_ core: FakeCore) throws -> [AccountTokenAssignment] {
        try core.outbox.filter { $0.target == .storeAccountToken }.map {
            try JSONDecoder().decode(AccountTokenAssignment.self, from: $0.body)
        }
    }

    @Test func theAccountThePurchaseEndsLinkedToIsQueuedOnceForTheOriginalTransaction() async throws {
        let core = AccountLinkFlowTests.core()
        core.storesTakingAccountTokens = [.appStore]
        let first = try await AccountLinkFlowTests.iap(core, "jws-1001")
        #expect(first.status == 200)
        let token = try #require(first.object["app_account_token"] as? String)
        #expect(
            try Self.queued(core) == [
                AccountTokenAssignment(
                    store: .appStore, environment: .sandbox, clientID: "rgc_app", appIdentifier: nil,
                    originalTransactionID: "1001", accountToken: token)
            ])

        // Signed in as someone else, the same purchase switches to its account: nothing more is queued.
        let other = try #require(try await AccountLinkFlowTests.iap(core, "jws-1002").object["access_token"] as? String)
        let switched = try await AccountLinkFlowTests.iap(core, "jws-1001", token: other)
        #expect(switched.object["account_switched"] as? Bool == true)
        #expect(try Self.queued(core).map(\.originalTransactionID) == ["1001", "1002"])
    }

    @Test func aPurchaseWithATokenAFamilySharedOneOrAStoreThatCannotBeToldQueuesNothing() async throws {
        let core = AccountLinkFlowTests.core()
        core.storesTakingAccountTokens = [.appStore]
        var carried = AccountLinkFlowTests.purchase("2001")
        carried.accountToken = UUID().uuidString.lowercased()
        core.add(evidence: "jws-2001", proves: carried)
        var shared = AccountLinkFlowTests.purchase("2002")
        shared.ownership = .familyShared
        core.add(evidence: "jws-2002", proves: shared)
        #expect(try await AccountLinkFlowTests.iap(core, "jws-2001").status == 200)
        #expect(try await AccountLinkFlowTests.iap(core, "jws-2002").status == 200)
        #expect(try Self.queued(core).isEmpty)

        core.storesTakingAccountTokens = []
        #expect(try await AccountLinkFlowTests.iap(core, "jws-1003").status == 200)
        #expect(try Self.queued(core).isEmpty)
        core.storesTakingAccountTokens = [.appStore]
        #expect(try await AccountLinkFlowTests.iap(core, "jws-1004").status == 200)
        #expect(try Self.queued(core).map(\.originalTransactionID) == ["1004"])
    }
}
