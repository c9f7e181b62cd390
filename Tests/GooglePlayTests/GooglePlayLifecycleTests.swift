import Foundation
import GooglePlay
import GooglePlayTestSupport
import OpenSSLCrypto
import ReceiptCore
import TestSupport
import Testing

/// Acknowledgements, the voided-purchases poll, and the JWT assertion checked by PyJWT.
@Suite struct GooglePlayLifecycle {
    @Test func purchasesAreAcknowledgedOrConsumedAsTheClientChose() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-ack")
        try google.addSubscription(token: "sub-ack")
        let provider = try GooglePlayVerify.provider(google)
        let product = try #require(
            try await provider.verify(evidence: "tok-ack", context: GooglePlayVerify.context()).first)
        let subscription = try #require(
            try await provider.verify(evidence: "sub-ack", context: GooglePlayVerify.context()).first)
        func client(_ settings: [String: [String]]) -> ClientInfo {
            ClientInfo(clientID: "rgc_test", gameID: 1, settings: settings)
        }
        #expect(
            provider.acknowledgement(for: product, client: client([GooglePlayProvider.Setting.acknowledge: ["off"]]))
                == nil)
        let acknowledge = try #require(provider.acknowledgement(for: product, client: client([:])))
        let consume = try #require(
            provider.acknowledgement(for: product, client: client([GooglePlayProvider.Setting.consume: ["on"]])))
        let subscribe = try #require(provider.acknowledgement(for: subscription, client: client([:])))
        #expect(acknowledge.parameters["action"] == "acknowledge" && consume.parameters["action"] == "consume")
        for message in [acknowledge, consume, subscribe] {
            // Round trip through JSON, as the outbox stores it.
            let stored = try JSONDecoder().decode(StoreAcknowledgement.self, from: try JSONEncoder().encode(message))
            try await provider.acknowledge(stored, credentials: [:])
        }
        #expect(
            google.state.actions.get() == [
                "acknowledge products/gems100 tok-ack", "consume products/gems100 tok-ack",
                "acknowledge subscriptions/vip.monthly sub-ack",
            ])
        google.failFirst("acknowledge", [500, 500, 500])
        await #expect(throws: StoreVerificationError.self) {
            try await provider.acknowledge(acknowledge, credentials: [:])
        }
        await google.shutdown()
    }

    @Test func theVoidedPollPagesRemembersWhereItStoppedAndTurnsVoidsIntoRefunds() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-v1", orderID: "GPA.0001-0000-0000-00001", state: 1)
        try google.addVoided(token: "tok-v1", orderID: "GPA.0001-0000-0000-00001", reason: 7, source: 2)
        try google.addVoided(token: "tok-gone", orderID: "GPA.0002-0000-0000-00002")
        let provider = try GooglePlayVerify.provider(google)
        let poller = VoidedPurchasePoller(provider: provider, interval: .seconds(1))
        let cursors = MemoryPollRun()
        let found = LockedBox<[StoreNotification]>([])
        let owner = ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: "rgc_test", gameID: 1,
                appIdentifiers: [GooglePlayProvider.packageNameKind.name: ["com.example.game"]]),
            credentials: [:])
        try await poller.poll(owners: [owner], run: cursors) { batch in found.update { $0 += batch } }
        let refunds = found.get()
        #expect(
            refunds.map(\.notificationID) == ["voided:GPA.0001-0000-0000-00001", "voided:GPA.0002-0000-0000-00002"])
        #expect(refunds.allSatisfy { $0.event.kind == .refunded })
        #expect(refunds[0].event.purchase?.productID == "gems100")
        #expect(refunds[0].event.purchase?.revocationReasonCode == 7)
        #expect(refunds[0].event.purchase?.revocationReason == "chargeback")
        // Google forgot the token: the void alone
        #expect(refunds[1].event.purchase?.transactionID == "GPA.0002-0000-0000-00002")
        #expect(google.hits("voided") == 2)  // one void per page
        let queries = google.state.voidedQueries.get()
        #expect(queries[1]["token"] == "page-1")
        // The next run starts near where the first window ended, not 30 days back.
        let firstEnd = try #require(Int64(queries[0]["endTime"] ?? ""))
        try await poller.poll(owners: [owner], run: cursors) { _ in }
        let resumed = try #require(Int64(google.state.voidedQueries.get().last?["startTime"] ?? ""))
        #expect(resumed >= firstEnd - 10 * 60 * 1000)
        #expect(resumed > Int64(Date().timeIntervalSince1970 * 1000) - 86_400_000)
        await google.shutdown()
    }

    /// A package Google refuses to list fails the run, naming where the key is set, after the
    /// other packages were read; the refused package's cursor stays where it was.
    @Test func aRefusedPackageFailsTheRunNamingTheKeyAndTheOthersAreStillRead() async throws {
        let google = try FakeGooglePlay()
        try google.addVoided(package: "com.example.other", token: "tok-o1", orderID: "GPA.0003-0000-0000-00003")
        let provider = try GooglePlayVerify.provider(google)
        let poller = VoidedPurchasePoller(provider: provider, interval: .seconds(1))
        let run = MemoryPollRun()
        let found = LockedBox<[String]>([])
        let owner = ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: "rgc_test", gameID: 1,
                appIdentifiers: [
                    GooglePlayProvider.packageNameKind.name: ["com.example.game", "com.example.other"]
                ]), credentials: [:])
        google.failFirst("voided", [403])  // the first package read
        do {
            try await poller.poll(owners: [owner], run: run) { batch in
                found.update { $0 += batch.map(\.notificationID) }
            }
            Issue.record("a refused package must fail the run")
        } catch {
            #expect(
                "\(error)".contains("com.example.game")
                    && "\(error)".contains("RECEIPTGATE_GOOGLE_SERVICE_ACCOUNT_KEY_PATH"), "\(error)")
            #expect(!"\(error)".contains("com.example.other"))
        }
        #expect(found.get() == ["voided:GPA.0003-0000-0000-00003"], "the other package was read")
        #expect(try await run.cursor("google_play.voided_purchases:com.example.game") == nil)
        #expect(run.pages == 1)
        await google.shutdown()
    }

    /// Google asking to be left alone longer than the HTTP client waits (a 429 with `Retry-After`,
    /// in either of its forms) makes the run's failure say so, so the next run waits that long.
    @Test(arguments: ["120", "HTTP-date"])
    func aRateLimitWithRetryAfterHoldsTheNextRun(form: String) async throws {
        let google = try FakeGooglePlay()
        // The provider's clock stands on a whole second: a date 120 s after it asks for exactly 120 s.
        let standing = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down))
        let provider = try GooglePlayVerify.provider(google, now: { standing })
        let poller = VoidedPurchasePoller(provider: provider, interval: .seconds(1))
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        google.state.retryAfter.set(form == "120" ? "120" : formatter.string(from: standing.addingTimeInterval(120)))
        google.failFirst("voided", [429, 429, 429, 429])
        let owner = ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: "rgc_test", gameID: 1,
                appIdentifiers: [
                    GooglePlayProvider.packageNameKind.name: ["com.example.game"]
                ]), credentials: [:])
        do {
            try await poller.poll(owners: [owner], run: MemoryPollRun()) { _ in }
            Issue.record("a rate-limited run must fail")
        } catch let asked as any StoreAskedToWait {
            let wait = try #require(asked.retryAfter)
            #expect(wait == .seconds(120), "waits as long as Google asked: \(wait)")
        }
        #expect(google.hits("voided") == 1, "a wait longer than the client's own is not waited out in the request")
        await google.shutdown()
    }

    /// A saved page token Google refuses (400) is dropped: the next run reads the window again
    /// from its first page instead of failing on that token for ever.
    @Test func aPageTokenGoogleRefusesIsDropped() async throws {
        let google = try FakeGooglePlay()
        try google.addVoided(package: "com.example.game", token: "tok-r1", orderID: "GPA.0004-0000-0000-00004")
        let provider = try GooglePlayVerify.provider(google)
        let poller = VoidedPurchasePoller(provider: provider, interval: .seconds(1))
        let run = MemoryPollRun()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let key = "google_play.voided_purchases:com.example.game"
        try await run.setCursor(key, to: #"{"since":\#(now - 86_400_000),"until":\#(now),"pageToken":"stale"}"#)
        let owner = ClientWithStoreCredentials(
            client: ClientInfo(
                clientID: "rgc_test", gameID: 1,
                appIdentifiers: [
                    GooglePlayProvider.packageNameKind.name: ["com.example.game"]
                ]), credentials: [:])
        google.failFirst("voided", [400])
        await #expect(throws: (any Error).self) { try await poller.poll(owners: [owner], run: run) { _ in } }
        #expect(try await run.cursor(key)?.contains("stale") == false)
        let found = LockedBox<[String]>([])
        try await poller.poll(owners: [owner], run: run) { batch in found.update { $0 += batch.map(\.notificationID) } }
        #expect(found.get() == ["voided:GPA.0004-0000-0000-00004"])
        #expect(google.state.voidedQueries.get().last?["token"] == nil, "read from the window's first page")
        await google.shutdown()
    }

    /// PyJWT, an implementation we did not write, reads our assertion with the key's public half.
    @Test func theAssertionIsAValidJWTForAnIndependentImplementation() async throws {
        guard let python = ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"] else {
            Issue.record("RECEIPTGATE_ORACLE_PYTHON is not set (scripts/test.sh installs PyJWT into the oracle venv)")
            return
        }
        let google = try FakeGooglePlay()
        try google.addProduct(token: "tok-jwt")
        _ = try await GooglePlayVerify.provider(google).verify(evidence: "tok-jwt", context: GooglePlayVerify.context())
        let assertion = try #require(google.state.assertions.get().first)
        let directory = TestDatabase.temporaryDirectory("pyjwt")
        let keyPath = directory.appendingPathComponent("public.pem").path
        let spki = try google.accountKey.publicKey.subjectPublicKeyInfo()
        let pem =
            "-----BEGIN PUBLIC KEY-----\n"
            + spki.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
            + "\n-----END PUBLIC KEY-----\n"
        try Data(pem.utf8).write(to: URL(fileURLWithPath: keyPath))
        let script = """
            import json, sys, time, jwt
            key = open(sys.argv[1]).read()
            claims = jwt.decode(sys.argv[2], key, algorithms=["RS256"], audience=sys.argv[3], issuer=sys.argv[4],
                                options={"require": ["iss", "aud", "iat", "exp", "scope"]})
            header = jwt.get_unverified_header(sys.argv[2])
            assert header["alg"] == "RS256", header
            assert claims["scope"] == "https://www.googleapis.com/auth/androidpublisher", claims
            assert 0 < claims["exp"] - claims["iat"] <= 3600, claims
            assert abs(claims["iat"] - time.time()) < 300, claims
            print(json.dumps({"ok": True, "kid": header.get("kid")}))
            """
        let result = try await ChildProcess.run(
            python, ["-c", script, keyPath, assertion, google.tokenURI, FakeGooglePlay.clientEmail], environment: [:])
        #expect(result.status == 0, "PyJWT refused the assertion: \(result.stderr)")
        #expect(result.stdout.contains(#""kid": "0123456789abcdef""#))
        // And PyJWT refuses it with the wrong key: the check can fail.
        let other = try TestKeys.rsa(.unrelated).publicKey.subjectPublicKeyInfo()
        try Data(
            ("-----BEGIN PUBLIC KEY-----\n"
                + other.base64EncodedString(options: [.lineLength64Characters, .endLineWithLineFeed])
                + "\n-----END PUBLIC KEY-----\n").utf8
        ).write(to: URL(fileURLWithPath: keyPath))
        let wrong = try await ChildProcess.run(
            python, ["-c", script, keyPath, assertion, google.tokenURI, FakeGooglePlay.clientEmail], environment: [:])
        #expect(wrong.status != 0)
        await google.shutdown()
    }
}
