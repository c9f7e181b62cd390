import AppStoreTestSupport
import Foundation
import HTTPClient
import ReceiptCore
import Synchronization
import TestSupport
import Testing

@testable import AppStore

/// Where the notification-history poll stands lives in its cursor: a process stopped half-way
/// through a window (here: its recording failed) leaves the page it was on, and the next process
/// carries on from that page of the same window, then moves to a new window that overlaps it.
@Suite struct NotificationHistoryPolling {
    struct RecordingFailed: Error {}

    static func poller(_ fake: FakeAppStoreServerAPI) -> NotificationHistoryPoller {
        var configuration = AppStoreConfiguration(trustRoots: [fake.pki.root])
        configuration.serverAPIKey = .init(
            keyID: FakeAppStoreServerAPI.keyID, issuerID: FakeAppStoreServerAPI.issuerID, privateKey: fake.teamKey)
        configuration.serverAPIProductionURL = "http://127.0.0.1:\(fake.production.port)"
        configuration.serverAPISandboxURL = "http://127.0.0.1:\(fake.sandbox.port)"
        let provider = AppStoreProvider(
            verifier: AppStoreSignedDataVerifier(trustRoots: [fake.pki.root]), configuration: configuration)
        return NotificationHistoryPoller(provider: provider, interval: .seconds(900))
    }

    @Test func aStoppedRunIsResumedFromItsPageAndTheNextWindowOverlapsTheLast() async throws {
        let fake = try FakeAppStoreServerAPI()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var uuids: [String] = []
        for index in 0..<5 {
            let uuid = UUID().uuidString.lowercased()
            uuids.append(uuid)
            let data: [String: any Sendable] = ["environment": "Sandbox", "bundleId": FakeAppStoreServerAPI.bundleID]
            let signed = try fake.pki.sign([
                "notificationType": "TEST", "notificationUUID": uuid, "version": "2.0",
                "signedDate": now - 60_000 + Int64(index), "data": data,
            ])
            fake.addToHistory(signed, signedDate: now - 60_000 + Int64(index), environment: "Sandbox")
        }
        // A forged record in the history is passed over, as the push route refuses it.
        fake.addToHistory(
            try AppleTestPKI().sign([
                "notificationType": "REFUND", "notificationUUID": "forged", "signedDate": now - 59_000,
            ]),
            signedDate: now - 59_000, environment: "Sandbox")
        let owner = ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: "rgc_1", gameID: 42,
                appIdentifiers: [AppStoreProvider.bundleIDKind.name: [FakeAppStoreServerAPI.bundleID]],
                environments: [.sandbox]), credentials: [:])
        let cursors = MemoryPollRun()
        let recorded = Mutex<[String]>([])
        let pages = Mutex(0)

        // The first process records the first page, then fails on the second.
        await #expect(throws: RecordingFailed.self) {
            try await Self.poller(fake).poll(owners: [owner], run: cursors) { found in
                let page = pages.withLock {
                    $0 += 1; return $0
                }
                if page == 2 { throw RecordingFailed() }
                recorded.withLock { $0 += found.map(\.notificationID) }
            }
        }
        let first = try #require(fake.state.historyQueries.get().first)
        #expect(first.environment == "Sandbox" && first.paginationToken == nil)
        #expect(first.startDate <= now - 24 * 3_600_000 + 5_000, "a first run reads the last day")

        // Another process (a new poller) resumes from the second page of the same window.
        let queriesBefore = fake.state.historyQueries.get().count
        try await Self.poller(fake).poll(owners: [owner], run: cursors) { found in
            recorded.withLock { $0 += found.map(\.notificationID) }
        }
        let resumed = fake.state.historyQueries.get()[queriesBefore...]
        #expect(resumed.first?.paginationToken == "page-2")
        #expect(resumed.allSatisfy { $0.startDate == first.startDate && $0.endDate == first.endDate })
        #expect(
            Set(recorded.withLock { $0 }) == Set(uuids),
            "every genuine notification was handed over, the forged one never")

        // The next run reads a new window, from a little before the last one ended.
        let saved = try #require(
            try await cursors.cursor("app_store.notification_history:Sandbox:\(FakeAppStoreServerAPI.bundleID)"))
        let cursor = try JSONDecoder().decode(WindowedPoll.Cursor.self, from: Data(saved.utf8))
        #expect(cursor.pageToken == nil && cursor.until == nil)
        #expect(cursor.since == first.endDate - WindowedPoll.Window(oldest: 0, now: 0).overlap)
        await fake.shutdown()
    }

    static func owner() -> ClientWithStoreCredentials {
        ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: "rgc_1", gameID: 42,
                appIdentifiers: [AppStoreProvider.bundleIDKind.name: [FakeAppStoreServerAPI.bundleID]],
                environments: [.sandbox]), credentials: [:])
    }

    static let cursorKey = "app_store.notification_history:Sandbox:\(FakeAppStoreServerAPI.bundleID)"

    static func addTest(_ fake: FakeAppStoreServerAPI, at signedDate: Int64) throws -> String {
        let uuid = UUID().uuidString.lowercased()
        let data: [String: any Sendable] = ["environment": "Sandbox", "bundleId": FakeAppStoreServerAPI.bundleID]
        fake.addToHistory(
            try fake.pki.sign([
                "notificationType": "TEST", "notificationUUID": uuid, "version": "2.0", "signedDate": signedDate,
                "data": data,
            ]),
            signedDate: signedDate, environment: "Sandbox")
        return uuid
    }

    /// A saved page token Apple no longer takes fails that run, and the next reads the window
    /// again from its first page instead of failing on the token for ever.
    @Test func aRefusedPageTokenIsDroppedAndTheWindowReadAgain() async throws {
        let fake = try FakeAppStoreServerAPI()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let uuid = try Self.addTest(fake, at: now - 60_000)
        let cursors = MemoryPollRun()
        // Saved as this poller saved its cursors before the shared engine: still read.
        try await cursors.setCursor(
            Self.cursorKey, to: #"{"since":\#(now - 3_600_000),"until":\#(now),"paginationToken":"stale"}"#)
        let recorded = Mutex<[String]>([])
        await #expect(throws: PollTargets.Failures.self) {
            try await Self.poller(fake).poll(owners: [Self.owner()], run: cursors) { _ in }
        }
        try await Self.poller(fake).poll(owners: [Self.owner()], run: cursors) { found in
            recorded.withLock { $0 += found.map(\.notificationID) }
        }
        #expect(recorded.withLock { $0 } == [uuid])
        let queries = fake.state.historyQueries.get()
        #expect(queries.map(\.paginationToken) == ["stale", nil])
        #expect(queries.last?.startDate == now - 3_600_000, "the same window, from its first page")
        await fake.shutdown()
    }

    /// A cursor older than Apple keeps (polling was off for weeks) starts a fresh window from the
    /// oldest Apple still has, not a request Apple would refuse for ever.
    @Test func aCursorOlderThanAppleKeepsStartsFromTheOldestItHas() async throws {
        let fake = try FakeAppStoreServerAPI()
        fake.state.history.set([:])
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let cursors = MemoryPollRun()
        let day: Int64 = 24 * 3_600_000
        try await cursors.setCursor(
            Self.cursorKey, to: #"{"since":\#(now - 40 * day),"until":\#(now - 39 * day),"pageToken":"page-2"}"#)
        try await Self.poller(fake).poll(owners: [Self.owner()], run: cursors) { _ in }
        let query = try #require(fake.state.historyQueries.get().first)
        #expect(query.paginationToken == nil)
        #expect(query.startDate > now - 30 * day && query.startDate < now - 29 * day, "within sandbox's 30 days")
        #expect(query.endDate >= now)
        await fake.shutdown()
    }

    /// Every type Apple sends in 2025–26, and one it may add later, is read as data: its type and
    /// subtype kept as sent, a ledger event only where one applies, and the page is never refused.
    @Test func newerAndUnknownNotificationTypesAreKeptRawNeverRefused() async throws {
        let fake = try FakeAppStoreServerAPI()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let types: [(type: String, subtype: String?, kind: StoreEvent.Kind)] = [
            ("ONE_TIME_CHARGE", nil, .purchased), ("RESCIND_CONSENT", nil, .other),
            ("METADATA_UPDATE", nil, .other),
            ("MIGRATION", nil, .other), ("PRICE_CHANGE", "ACCEPTED", .other),
            ("SOMETHING_APPLE_ADDS_IN_2027", "AND_A_SUBTYPE", .other),
        ]
        for (index, item) in types.enumerated() {
            var payload: [String: any Sendable] = [
                "notificationType": item.type, "notificationUUID": "type-\(index)", "version": "2.0",
                "signedDate": now - 60_000,
                "data": ["environment": "Sandbox", "bundleId": FakeAppStoreServerAPI.bundleID]
                    as [String: any Sendable],
            ]
            if let subtype = item.subtype { payload["subtype"] = subtype }
            fake.addToHistory(try fake.pki.sign(payload), signedDate: now - 60_000, environment: "Sandbox")
        }
        let found = Mutex<[StoreNotification]>([])
        try await Self.poller(fake).poll(owners: [Self.owner()], run: MemoryPollRun()) { batch in
            found.withLock { $0 += batch }
        }
        let read = found.withLock { $0 }.sorted { $0.notificationID < $1.notificationID }
        #expect(read.map(\.type) == types.map(\.type))
        #expect(read.map(\.subtype) == types.map(\.subtype))
        #expect(read.map(\.event.kind) == types.map(\.kind))
        #expect(
            read.allSatisfy { String(decoding: $0.decodedJSON, as: UTF8.self).contains($0.type) },
            "the decoded record keeps the type as sent")
        await fake.shutdown()
    }
}
