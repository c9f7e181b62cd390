import AppStoreTestSupport
import Foundation
import ReceiptGate
import TestSupport
import Testing

/// The console's rules, checked over HTTP against the running service: who gets in, what a form
/// must carry, what is never shown, and that what it counts is what /metrics counts.
@Suite struct ConsoleRules {
    static let token = "console-admin-token-0123456789abcdef"

    @Test func signInSessionsAndCSRF() async throws {
        let harness = try await VerifyHarness.start(adminToken: Self.token)
        defer { harness.stop() }
        let browser = ConsoleBrowserSession(port: harness.service.port)

        let before = try await browser.get("/console/clients")
        #expect(before.status == 303 && before.headers["location"] == "/console/sign-in")
        let signInPage = try await browser.get("/console/sign-in")
        #expect(signInPage.headers["content-security-policy"]?.contains("script-src 'self'") == true)
        #expect(signInPage.text.contains(#"<input id="token" name="token" type="password""#))

        // No CSRF token: 403 before anything else, whatever the path, even with the right admin token.
        for path in ["/console/sign-in", "/console/clients", "/console/no/such/page", "/console"] {
            let refused = try await browser.post(path, [("token", Self.token), ("name", "x")], csrf: .some(nil))
            #expect(refused.status == 403, "\(path) answered \(refused.status)")
            #expect(!refused.allHeaders("set-cookie").contains { $0.hasPrefix("rg_console=") })
        }
        let wrong = try await browser.post("/console/sign-in", [("token", "not-the-token-but-long-enough")])
        #expect(wrong.status == 401)
        #expect(wrong.text.contains(#"role="alert""#))

        let signedIn = try await browser.post("/console/sign-in", [("token", Self.token)])
        #expect(signedIn.status == 303 && signedIn.headers["location"] == "/console")
        let cookie = try #require(signedIn.allHeaders("set-cookie").first { $0.hasPrefix("rg_console=") })
        #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict") && cookie.contains("Max-Age=28800"))
        #expect(!cookie.contains("Secure"), "served on loopback: a plain-http cookie")
        let overview = try await browser.get("/console")
        #expect(overview.status == 200 && overview.text.contains("<h1>Overview</h1>"))
        #expect(
            !overview.text.contains("<script>") && !overview.text.contains(" style=")
                && !overview.text.contains(" onclick="))

        // A token made for another browser's cookie does not pass with this one.
        let other = ConsoleBrowserSession(port: harness.service.port)
        _ = try await other.signIn(token: Self.token)
        _ = try await other.get("/console/clients")
        let crossed = try await browser.post("/console/clients", [("name", "crossed")], csrf: .some(other.csrf))
        #expect(crossed.status == 403)
        #expect(try await harness.service.clients.list().allSatisfy { $0.name != "crossed" })

        // A pre-session cookie and its token (anyone can get a pair) planted beside a real session
        // open nothing but the sign-in form.
        let attacker = ConsoleBrowserSession(port: harness.service.port)
        _ = try await attacker.get("/console/sign-in")
        browser.setCookie("rg_console_pre", try #require(attacker.cookies["rg_console_pre"]))
        let planted = try await browser.post("/console/clients", [("name", "planted")], csrf: .some(attacker.csrf))
        #expect(planted.status == 403)
        browser.forget("rg_console_pre")
        // The gate reads the path as the router does: `//console/…` is under /console too.
        let doubled = try await browser.post(
            "//console/clients/\(harness.client.clientID)", [("name", "renamed")], csrf: .some(nil))
        #expect(doubled.status == 403)
        #expect(try await harness.service.clients.find(harness.client.clientID)?.name != "renamed")

        let session = browser.cookies["rg_console"]
        _ = try await browser.get("/console")
        #expect(try await browser.post("/console/sign-out", []).status == 303)
        browser.setCookie("rg_console", try #require(session))
        let replayed = try await browser.get("/console")
        #expect(replayed.status == 303, "a signed-out session's cookie opens nothing")

        let audit = try await other.get("/console/audit")
        #expect(
            audit.text.contains(#"<td class="action">sign-in</td>"#)
                && audit.text.contains(#"<td class="action">sign-out</td>"#))
    }

    /// Wrong guesses from the address a proxy shares with the operator cannot lock the operator out;
    /// behind a trusted TLS proxy the cookie is `Secure` although the listener is loopback.
    @Test func guessesAreHeldBackButTheRightTokenAlwaysSignsIn() async throws {
        let proxy = try #require(TrustedProxy("127.0.0.1"))
        let harness = try await VerifyHarness.start(adminToken: Self.token, configure: { $0.trustedProxies = [proxy] })
        defer { harness.stop() }
        let guesser = ConsoleBrowserSession(port: harness.service.port)
        // Ten wrong guesses a minute are answered 401, the next 429. The minute is the clock's, so a
        // slow run may cross into the next one (which starts counting afresh) once: at most 21 guesses.
        var answers: [Int] = []
        for attempt in 1...25 where answers.last != 429 {
            _ = try await guesser.get("/console/sign-in")
            answers.append(
                try await guesser.post("/console/sign-in", [("token", "wrong-guess-number-\(attempt)-padding")]).status)
        }
        #expect(
            answers.last == 429 && answers.dropLast().allSatisfy { $0 == 401 } && answers.count >= 11
                && answers.count <= 21, "\(answers)")
        let operator_ = ConsoleBrowserSession(port: harness.service.port)
        operator_.extraHeaders = ["X-Forwarded-Proto": "https"]
        let signedIn = try await operator_.signIn(token: Self.token)
        #expect(signedIn.status == 303)
        #expect(signedIn.allHeaders("set-cookie").first { $0.hasPrefix("rg_console=") }?.contains("; Secure") == true)
    }

    @Test func aNewSecretIsShownOnceAndNamesAreText() async throws {
        let harness = try await VerifyHarness.start(adminToken: Self.token)
        defer { harness.stop() }
        let browser = ConsoleBrowserSession(port: harness.service.port)
        #expect(try await browser.signIn(token: Self.token).status == 303)
        _ = try await browser.get("/console/clients/new")

        // The rules of the command line: plain http needs the client's consent.
        let insecure = try await browser.post(
            "/console/clients",
            [
                ("name", "Plain"), ("webhook_url", "http://127.0.0.1:9/hook"),
                ("setting.bundle-id", "com.example.plain"),
            ])
        #expect(insecure.status == 422)
        #expect(insecure.text.contains("must be https://"))
        #expect(
            insecure.text.contains(#"value="Plain""#) && insecure.text.contains(">com.example.plain</textarea>"),
            "the refused form comes back as sent")

        let name = #"<script>alert("x")</script> & Co"#
        let created = try await browser.post(
            "/console/clients",
            [
                ("name", name), ("webhook_url", "https://hooks.example.com/x"),
                ("environments", "sandbox"), ("setting.bundle-id", "com.example.other"),
            ])
        #expect(created.status == 201, "\(created.text)")
        let secret = try #require(
            created.text.range(of: #"rgs_[A-Za-z0-9_-]+"#, options: .regularExpression).map { String(created.text[$0]) }
        )
        #expect(created.text.contains(#"data-copy="new-secret""#))
        let clientID = try #require(
            created.text.range(of: #"rgc_[0-9a-f]+"#, options: .regularExpression).map { String(created.text[$0]) })
        let stored = try #require(try await harness.service.clients.find(clientID))
        #expect(
            stored.name == name && stored.environments == [.sandbox]
                && stored.appIdentifiers["bundle_id"] == ["com.example.other"])

        for path in ["/console/clients", "/console/clients/\(clientID)", "/console/audit", "/console"] {
            let page = try await browser.get(path)
            #expect(page.status == 200)
            #expect(!page.text.contains(secret), "\(path) shows the secret")
            #expect(!page.text.contains("<script>alert"), "\(path) renders a name as markup")
        }
        #expect(
            try await browser.get("/console/clients").text.contains(
                "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; Co"))

        // Rotating asks first; the new secret replaces the old one and is shown once.
        let asked = try await browser.post("/console/clients/\(clientID)/rotate", [])
        #expect(asked.status == 200 && asked.text.contains(#"name="confirm" value="yes""#))
        #expect(try await harness.service.clients.secret(for: clientID)?.secret == secret)
        let rotated = try await browser.post("/console/clients/\(clientID)/rotate", [("confirm", "yes")])
        let newSecret = try #require(try await harness.service.clients.secret(for: clientID)?.secret)
        #expect(newSecret != secret && rotated.text.contains(newSecret))
        #expect(!(try await browser.get("/console/clients/\(clientID)")).text.contains(newSecret))
    }

    @Test func verificationsAreCountedOnceForMetricsAndTheConsole() async throws {
        let harness = try await VerifyHarness.start(adminToken: Self.token)
        defer { harness.stop() }
        let receipt = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000333333333", "originalTransactionId": "2000000333333333"])
        )
        let body: [String: Any] = [
            "store": "app_store", "receipt": receipt, "product_id": "gems.100", "player_id": "p-7",
        ]
        #expect(try await harness.client.post("/v1/verify", json: body).status == 200)
        #expect(try await harness.client.post("/v1/verify", json: body).status == 200)
        let foreign = try harness.pki.sign(
            AppleTestPKI.transaction(["transactionId": "2000000444444444", "bundleId": "com.example.else"]))
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": foreign]).status == 422)
        for store in ["no_such_store_1", "no_such_store_2"] {
            #expect(try await harness.client.post("/v1/verify", json: ["store": store, "receipt": "x"]).status == 400)
        }

        let metrics = try await RawHTTP.request(
            port: harness.service.port, path: "/metrics", headers: ["Authorization": "Bearer \(Self.token)"]
        ).text
        let counted = metrics.split(separator: "\n").filter { $0.hasPrefix("receiptgate_verifications_total{") }.map(
            String.init)
        #expect(
            counted.contains(#"receiptgate_verifications_total{store="app_store",outcome="verified"} 1"#), "\(counted)")
        #expect(counted.contains(#"receiptgate_verifications_total{store="app_store",outcome="duplicate"} 1"#))
        #expect(
            counted.contains {
                $0.hasPrefix(#"receiptgate_verifications_total{store="app_store",outcome="refused:"#)
                    && $0.hasSuffix(" 1")
            })
        // A store name the caller made up is one label, however many there are.
        #expect(
            counted.contains(#"receiptgate_verifications_total{store="unknown",outcome="refused:UNKNOWN_STORE"} 2"#))
        #expect(!metrics.contains("no_such_store"))

        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.token)
        let overview = try await browser.get("/console")
        #expect(
            overview.text.contains(
                #"<td class="store">app_store</td><td class="outcome">verified</td><td class="count">1</td><td class="day count">1</td>"#
            ))
        #expect(
            overview.text.contains(
                #"<td class="store">unknown</td><td class="outcome">refused:UNKNOWN_STORE</td><td class="count">2</td>"#
            ))
        #expect(overview.text.contains("<svg") && overview.text.contains(#"<polyline class="series"#))

        // The purchase is found by its player and shows the attempts.
        let found = try await browser.get("/console/purchases?q=p-7")
        #expect(found.text.contains(#"href="/console/purchases/app_store/2000000333333333""#))
        let page = try await browser.get("/console/purchases/app_store/2000000333333333")
        #expect(
            page.text.contains(#"<dd id="record-state">active</dd>"#)
                && page.text.contains(#"<dd id="record-player">p-7</dd>"#))
        #expect(
            page.text.components(separatedBy: #"<td class="outcome">"#).count - 1 == 2,
            "the first verification and its duplicate")
    }

    @Test func aClientDisabledInTheConsoleIsRefusedByTheAPI() async throws {
        let harness = try await VerifyHarness.start(adminToken: Self.token)
        defer { harness.stop() }
        let browser = ConsoleBrowserSession(port: harness.service.port)
        _ = try await browser.signIn(token: Self.token)
        let clientID = harness.client.clientID
        _ = try await browser.get("/console/clients/\(clientID)")
        let asked = try await browser.post("/console/clients/\(clientID)/disable", [])
        #expect(asked.text.contains("<h1>Confirm disabling the client</h1>"))
        #expect(
            try await harness.service.clients.find(clientID)?.disabled == false,
            "nothing happens before the confirmation")
        let done = try await browser.post("/console/clients/\(clientID)/disable", [("confirm", "yes")])
        #expect(done.status == 303)
        #expect(
            try await browser.get("/console/clients/\(clientID)").text.contains(
                #"<dd id="client-status">disabled</dd>"#))
        let receipt = try harness.pki.sign(AppleTestPKI.transaction())
        #expect(
            try await harness.client.post("/v1/verify", json: ["store": "app_store", "receipt": receipt]).status == 401)
        let audit = try await browser.get("/console/audit")
        #expect(audit.text.contains(#"<td class="action">client.disable</td><td class="target">\#(clientID)</td>"#))
    }
}
