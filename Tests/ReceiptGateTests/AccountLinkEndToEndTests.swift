import AccountLink
import AppStore
import AppStoreTestSupport
import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// `POST /iap` and the OpenID endpoints over HTTP on a real Postgres: the account-link flows, one
/// account under concurrency, limits shared by two processes, tokens an independent library
/// accepts, and entitlements that follow the ledger.
@Suite struct AccountLinkEndToEnd {
    static let python = ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"]
    static let headers = [
        "Content-Type": "application/json", "X-Client-App-Version": "8.10.123", "X-Client-Device-Model": "mobile",
        "X-Client-OS": "ios", "X-Client-OS-Version": "17.4", "X-SDK-Version": "5.0.123",
    ]

    /// A service with the AccountLink dialect (and the client for com.example.game).
    static func start(
        smtp: SMTPSettings? = nil, rateLimits: [String: ServiceConfiguration.RateLimitOverride] = [:]
    ) async throws -> VerifyHarness {
        let pki = try AppleTestPKI()
        var configuration = ServiceConfiguration()
        configuration.port = 0
        configuration.databaseURL = try await TestDatabase.makeDatabase(prefix: "acct")
        configuration.masterKey = Data(repeating: 7, count: 32)
        configuration.dataDirectory = TestDatabase.temporaryDirectory("acct")
        configuration.smtp = smtp
        configuration.rateLimits = rateLimits
        let service = try await Self.service(configuration, pki: pki)
        service.outboxConfiguration = VerifyHarness.fastOutbox()
        try await service.start()
        let created = try await service.clients.create(VerifyHarness.settings(environments: [.sandbox], gameID: 42))
        return VerifyHarness(
            service: service, pool: service.database.pool, pki: pki,
            client: SignedClient(port: service.port, clientID: created.client.clientID, secret: created.secret))
    }

    static func service(_ configuration: ServiceConfiguration, pki: AppleTestPKI) async throws -> Service {
        let logger = Logger(minimumLevel: .error)
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: [pki.root]))
        return try Service(
            configuration: configuration, logger: logger, database: try Database.open(configuration, logger: logger),
            stores: [provider.registration], dialects: [AccountLink()])
    }

    static func subscription(_ harness: VerifyHarness, _ id: String, revoked: Bool = false) throws -> String {
        var fields: [String: any Sendable] = [
            "transactionId": id, "originalTransactionId": id, "productId": "premium.monthly",
            "type": "Auto-Renewable Subscription",
            "expiresDate": Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000,
        ]
        if revoked {
            fields["revocationDate"] = Int64(Date().timeIntervalSince1970 * 1000); fields["revocationReason"] = 0
        }
        return try harness.pki.sign(AppleTestPKI.transaction(fields))
    }

    static func iap(
        _ port: Int, _ jws: String, email: String? = nil, token: String? = nil, extra: [String: String] = [:]
    ) async throws -> RawHTTP.Response {
        var body: [String: Any] = ["apple": ["bundle_id": "com.example.game", "subscription_transaction_jws": jws]]
        if let email { body["customer_details"] = ["email": email] }
        var headers = Self.headers
        if let token { headers["Authorization"] = "Bearer \(token)" }
        headers.merge(extra) { _, new in new }
        return try await RawHTTP.request(
            port: port, method: "POST", path: "/iap", headers: headers,
            body: try JSONSerialization.data(withJSONObject: body))
    }

    static func userinfo(_ port: Int, _ token: String) async throws -> RawHTTP.Response {
        try await RawHTTP.request(port: port, path: "/userinfo", headers: ["Authorization": "Bearer \(token)"])
    }

    @Test func flowsConcurrencyRefundsAndForgeries() async throws {
        let harness = try await Self.start()
        defer { harness.stop() }
        let port = harness.client.port

        // (d) then (a): an automatic account, then a second purchase linked to it by its token.
        let d = try await Self.iap(port, try Self.subscription(harness, "2000000000120001"))
        #expect(d.status == 200, "\(d.text)")
        let dBody = try d.json()
        #expect(dBody["auto_account_created"] as? Bool == true)
        #expect(
            Set(dBody.keys) == [
                "access_token", "refresh_token", "account_switched", "email_confirmation_required",
                "auto_account_created",
                "app_account_token",
            ])
        let token = try #require(dBody["access_token"] as? String)
        let a = try await Self.iap(port, try Self.subscription(harness, "2000000000120002"), token: token)
        #expect(try a.json()["account_switched"] as? Bool == false)
        let info = try await Self.userinfo(port, token).json()
        #expect((info["entitlements"] as? [[String: Any]])?.count == 2)

        // (c) and (b) without SMTP: the mails wait in the outbox.
        let c = try await Self.iap(port, try Self.subscription(harness, "2000000000120003"), email: "ada@example.com")
        #expect(try c.json()["email_confirmation_required"] as? Bool == true)
        let b = try await Self.iap(
            port, try Self.subscription(harness, "2000000000120004"), email: "eve@example.com", token: token)
        #expect(try b.json()["email_confirmation_required"] as? Bool == true)
        let waiting = try await harness.pool.query(
            "SELECT count(*) AS n FROM outbox WHERE target = 'email' AND status = 'pending'")
        #expect(try waiting[0].decode("n", as: Int.self) == 2)

        // Switch: the token of another account, and a purchase already linked to the first.
        let other = try #require(
            try await Self.iap(port, try Self.subscription(harness, "2000000000120005")).json()["access_token"]
                as? String)
        let switched = try await Self.iap(port, try Self.subscription(harness, "2000000000120001"), token: other)
        #expect(try switched.json()["account_switched"] as? Bool == true)

        // Two simultaneous first calls with one receipt: one account.
        let jws = try Self.subscription(harness, "2000000000120006")
        let before = try await harness.count("accounts")
        async let first = Self.iap(port, jws)
        async let second = Self.iap(port, jws)
        let answers = try await [first, second]
        #expect(answers.allSatisfy { $0.status == 200 })
        #expect(try await harness.count("accounts") == before + 1)
        #expect(answers.filter { (try? $0.json()["auto_account_created"] as? Bool) == true }.count == 1)

        // A forged receipt and a refunded one create nothing.
        let accounts = try await harness.count("accounts")
        let forged = try await Self.iap(
            port, try AppleTestPKI().sign(AppleTestPKI.transaction(["transactionId": "2000000000120007"])))
        #expect(forged.status == 422)
        let refunded = try await Self.iap(port, try Self.subscription(harness, "2000000000120008", revoked: true))
        #expect(refunded.status == 422)
        #expect(try refunded.json()["error"] as? String == "PURCHASE_REFUNDED")
        #expect(try await harness.count("accounts") == accounts)

        // A refund learned later removes the entitlement from /userinfo.
        let refund = try await NotificationsDriveTheLedger.notify(
            harness, type: "REFUND",
            transaction: [
                "transactionId": "2000000000120002", "originalTransactionId": "2000000000120002",
                "productId": "premium.monthly",
                "type": "Auto-Renewable Subscription", "revocationDate": Int64(Date().timeIntervalSince1970 * 1000),
                "revocationReason": 0,
                "expiresDate": Int64(Date().timeIntervalSince1970 * 1000) + 86_400_000,
            ])
        #expect(refund.status == 200)
        let after = try await Self.userinfo(port, token).json()
        let products =
            (after["entitlements"] as? [[String: Any]])?.compactMap { $0["original_transaction_id"] as? String } ?? []
        #expect(!products.contains("2000000000120002"))
        #expect(try await Self.userinfo(port, "nope").status == 401)

        // An independent library verifies the access token from the published keys.
        if let python = Self.python {
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "Conformance/verify_jwt.py"
            ).path
            let result = try await ChildProcess.run(
                python, [script, "http://127.0.0.1:\(port)", harness.client.clientID, token],
                environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
            #expect(result.status == 0, "\(result.stderr.suffix(1500))")
            #expect(result.stdout.contains("\"sub\""))
        }
    }

    @Test func headerRulesRefreshRotationAndKeyRotation() async throws {
        let harness = try await Self.start()
        defer { harness.stop() }
        let port = harness.client.port
        let jws = try Self.subscription(harness, "2000000000130001")
        for (name, value) in [
            ("X-Client-OS", "\u{1}"), ("X-SDK-Version", ""),
            ("X-Client-App-Version", String(repeating: "1", count: 200)),
        ] {
            let response = try await Self.iap(port, jws, extra: [name: value])
            #expect(response.status == 400)
            #expect((try response.json()["message"] as? String)?.contains(name.lowercased()) == true)
        }
        #expect(try await harness.count("accounts") == 0)
        // Free-form values as a seed-only SDK sends them, and a forwarded-for that is no address (ignored).
        let freeForm = try await Self.iap(
            port, jws,
            extra: [
                "X-Client-OS": "iOS 17.4", "X-Client-Device-Model": "iPhone15,2",
                "X-Client-App-Version": "8.10.123 (456)", "X-Forwarded-For": "bogus",
            ])
        #expect(freeForm.status == 200, "\(freeForm.text)")

        let refresh = try #require(try await Self.iap(port, jws).json()["refresh_token"] as? String)
        func exchange(_ token: String) async throws -> RawHTTP.Response {
            try await RawHTTP.request(
                port: port, method: "POST", path: "/oauth/token",
                headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data("grant_type=refresh_token&refresh_token=\(token)".utf8))
        }
        let rotated = try await exchange(refresh)
        #expect(rotated.status == 200)
        let next = try #require(try rotated.json()["refresh_token"] as? String)
        #expect(try await exchange(refresh).status == 400)
        #expect(try await exchange(next).status == 400, "reuse revoked the family")

        // Rotation: a new kid signs, the old one stays published.
        let oldKeys =
            try await RawHTTP.request(port: port, path: "/.well-known/jwks.json").json()["keys"] as? [[String: Any]]
        _ = try await harness.service.repositories.signingKeys.rotate(keepPublished: .seconds(900))
        let newKeys =
            try await RawHTTP.request(port: port, path: "/.well-known/jwks.json").json()["keys"] as? [[String: Any]]
        #expect(oldKeys?.count == 1)
        #expect(newKeys?.count == 2)
        let token = try #require(try await Self.iap(port, jws).json()["access_token"] as? String)
        #expect(try await Self.userinfo(port, token).status == 200)
    }

    @Test func aLimitSharedByTwoProcessesAnswers429WithRetryAfter() async throws {
        let limits = [
            "accountlink.iap.address": ServiceConfiguration.RateLimitOverride(
                limit: 3, window: VerifyHarness.rateLimitWindow)
        ]
        let harness = try await Self.start(rateLimits: limits)
        defer { harness.stop() }
        let other = try await Self.service(harness.service.configuration, pki: harness.pki)
        try await other.start()
        defer { Task.detached { await other.shutdown() } }
        for port in [harness.client.port, other.port, harness.client.port] {
            #expect(try await Self.iap(port, "junk").status == 422)
        }
        let limited = try await Self.iap(other.port, "junk")
        #expect(limited.status == 429)
        #expect(VerifyHarness.isTheWindowsEnd(limited.headers["retry-after"].flatMap(Int.init)), "\(limited.headers)")
        #expect(try limited.json()["error"] as? String == "RATE_LIMITED")
        await other.shutdown()
    }

    @Test(.enabled(if: python != nil, "needs RECEIPTGATE_ORACLE_PYTHON with aiosmtpd (scripts/test.sh installs it)"))
    func mailLinksFinishFlowsBAndCThenThePasswordSignsIn() async throws {
        let python = try #require(Self.python)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "Conformance/smtp_sink.py"
        ).path
        let sink = try ChildProcess.launch(python, [script], environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
        defer { sink.send(SIGTERM) }
        let smtpPort = try #require(
            Int(try await sink.waitForStderrLine(containing: "listening").split(separator: " ").last ?? ""))
        let harness = try await Self.start(
            smtp: SMTPSettings(url: "smtp://127.0.0.1:\(smtpPort)", from: "noreply@example.com", insecure: true))
        defer { harness.stop() }
        let port = harness.client.port

        func mail(_ count: Int) async throws -> String {
            for _ in 0..<200 {
                let lines = sink.stdout.split(separator: "\n")
                if lines.count >= count { return String(lines[count - 1]) }
                try await Task.sleep(for: .milliseconds(50))
            }
            throw RawHTTP.Failure(description: "no mail arrived")
        }
        func link(in line: String, path: String) throws -> String {
            let data = try #require(try Binary.json(line)["data"] as? String)
            let start = try #require(data.range(of: "\(path)?token="), "\(sink.stdout)")
            return String(data[start.upperBound...].prefix { !$0.isWhitespace })
        }

        // (c): a new account by e-mail; the mail's link sets its password.
        #expect(
            try await Self.iap(port, try Self.subscription(harness, "2000000000140001"), email: "ada@example.com")
                .status == 200)
        let reset = try link(in: try await mail(1), path: "/account/reset-password")
        // The mail that arrived holds the link; the outbox row it was sent from never did (sealed).
        let stored = try await harness.pool.query(
            "SELECT \(unescaped: OutboxRepository.bodyColumn) AS p FROM outbox o WHERE target = 'email'"
        ).map {
            try $0.decode("p", as: String.self)
        }
        #expect(stored.count == 1 && !stored.contains { $0.contains(reset) })
        #expect(
            try await RawHTTP.request(port: port, path: "/account/reset-password?token=\(reset)").text.contains("<form")
        )
        let set = try await RawHTTP.request(
            port: port, method: "POST", path: "/account/reset-password",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data("token=\(reset)&password=correct-horse".utf8))
        #expect(set.status == 200)
        let signIn = try await RawHTTP.request(
            port: port, method: "POST", path: "/oauth/token",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data(
                "grant_type=password&client_id=\(harness.client.clientID)&username=ada%40example.com&password=correct-horse"
                    .utf8))
        #expect(signIn.status == 200, "\(signIn.text)")
        let token = try #require(try signIn.json()["access_token"] as? String)

        // (b): a new address for that account. Its address is confirmed, so that address approves
        // the change and the new one confirms it: one mail to each, both links needed.
        let b = try await Self.iap(
            port, try Self.subscription(harness, "2000000000140002"), email: "ada@new.example.com", token: token)
        #expect(try b.json()["email_confirmation_required"] as? Bool == true)
        _ = try await mail(3)
        func mail(to recipient: String) throws -> String {
            let line = try #require(
                sink.stdout.split(separator: "\n").map(String.init).last {
                    (try? Binary.json($0)["to"] as? [String]) == [recipient]
                })
            return try link(in: line, path: "/account/confirm-email")
        }
        for recipient in ["ada@example.com", "ada@new.example.com"] {
            let confirmed = try await RawHTTP.request(
                port: port, method: "POST", path: "/account/confirm-email",
                headers: ["Content-Type": "application/json"],
                body: try JSONSerialization.data(withJSONObject: ["token": try mail(to: recipient)]))
            #expect(confirmed.status == 200, "\(recipient): \(confirmed.text)")
        }
        let info = try await Self.userinfo(port, token).json()
        #expect(info["email"] as? String == "ada@new.example.com")
        #expect(info["email_verified"] as? Bool == true)
        let newSignIn = try await RawHTTP.request(
            port: port, method: "POST", path: "/oauth/token",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data(
                "grant_type=password&client_id=\(harness.client.clientID)&username=ada%40new.example.com&password=correct-horse"
                    .utf8))
        #expect(newSignIn.status == 200)
    }
}
