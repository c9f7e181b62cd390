import Foundation
import TestSupport
import Testing

@testable import OpenSSLCrypto

/// Fixed-base tables are counted while their keys live, and when every table is held the least
/// recently used one gives way to a key in steady use (`ECVerifyContexts.verificationsBeforeTable`).
@Suite struct TableBudgetRules {
    /// Waits until `contexts` has its table: it is built on a shared worker thread.
    static func untilTabulated(_ contexts: ECVerifyContexts) async throws -> Bool {
        await eventually { contexts.hasFixedKeyTable }
    }

    /// Verifies a genuine signature `times` times; how many verified.
    static func warm(_ contexts: ECVerifyContexts, raw: Data, message: Data, times: Int) async -> Int {
        await offThePool { (0..<times).filter { _ in contexts.verifyES256(raw: raw, message: message) }.count }
    }

    @Test func fortyKeysOneAfterAnotherEachEarnATableAndGiveItBackWhenFreed() async throws {
        let message = Data("forty".utf8)
        for index in 0..<40 {
            weak var freed: ECVerifyContexts?
            do {
                let privateKey = try PrivateKey.generateP256()
                let key = try privateKey.publicKey
                let contexts = try #require(key.key.ecContexts)
                let raw = try privateKey.signES256(message)
                #expect(
                    await Self.warm(
                        contexts, raw: raw, message: message, times: ECVerifyContexts.verificationsBeforeTable)
                        == ECVerifyContexts.verificationsBeforeTable)
                #expect(try await Self.untilTabulated(contexts), "key \(index) earned no table")
                #expect(ECVerifyContexts.tables.holds(contexts))
                #expect(key.isValidES256(signature: raw, for: message))
                freed = contexts
            }
            // The worker thread that built the table lets go of its reference just after the table
            // is published: wait for that, without a time bound on the machine's speed.
            #expect(await eventually { freed == nil }, "key \(index)'s contexts (and table) outlived the key")
        }
    }

    @Test func withSixteenTablesHeldTheLeastRecentlyUsedGivesWayToASeventeenthKeyInSteadyUse() async throws {
        let budget = TableBudget(limit: 16)
        let message = Data("seventeen".utf8)
        var keys: [(key: PublicKey, contexts: ECVerifyContexts, raw: Data)] = []
        for _ in 0..<17 {
            let privateKey = try PrivateKey.generateP256()
            let key = try privateKey.publicKey
            keys.append(
                (key, ECVerifyContexts(key: key.key.pointer, tables: budget), try privateKey.signES256(message)))
        }
        let threshold = ECVerifyContexts.verificationsBeforeTable
        for (_, contexts, raw) in keys.prefix(16) {
            #expect(await Self.warm(contexts, raw: raw, message: message, times: threshold) == threshold)
            #expect(try await Self.untilTabulated(contexts))
        }
        #expect(budget.held == 16)
        // Every table but the first key's is used again: the first is now the least recently used.
        for (_, contexts, raw) in keys[1..<16] { #expect(contexts.verifyES256(raw: raw, message: message)) }

        let (_, newcomer, newcomerRaw) = keys[16]
        #expect(await Self.warm(newcomer, raw: newcomerRaw, message: message, times: threshold) == threshold)
        #expect(try await Self.untilTabulated(newcomer), "the seventeenth key in steady use earned no table")
        #expect(budget.held == 16, "never more tables than the budget")
        let first = keys[0].contexts
        #expect(!first.hasFixedKeyTable && !budget.holds(first), "the least recently used table gave way")
        #expect(keys[1..<16].allSatisfy { $0.contexts.hasFixedKeyTable }, "tables in more recent use were kept")
        // The key that lost its table still verifies, through OpenSSL, and refuses what it must.
        #expect(first.verifyES256(raw: keys[0].raw, message: message))
        #expect(!first.verifyES256(raw: keys[0].raw, message: Data("seventeeN".utf8)))
        #expect(first.countedVerifications == 1, "it counts toward a table afresh")
    }
}
