import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// The one-time links of AccountLink's mails are not readable at rest: the outbox row holds the
/// mail sealed under the master key, bound to its event id, opened only when claimed for sending.
@Suite struct AccountLinkMailAtRest {
    @Test func aQueuedMailIsSealedAndOpensOnlyForItsOwnRow() async throws {
        let harness = try await AccountLinkEndToEnd.start()  // no SMTP: the mail waits in the outbox
        defer { harness.stop() }
        let port = harness.client.port
        let c = try await AccountLinkEndToEnd.iap(
            port, try AccountLinkEndToEnd.subscription(harness, "2000000000150001"), email: "ada@example.com")
        #expect(c.status == 200, "\(c.text)")

        let rows = try await harness.pool.query(
            """
            SELECT event_id::text AS id, \(unescaped: OutboxRepository.bodyColumn) AS payload FROM outbox o WHERE target = 'email'
            """)
        let row = try #require(rows.first)
        let stored = try row.decode("payload", as: String.self), eventID = try row.decode("id", as: String.self)
        #expect(!stored.contains("token="))
        #expect(!stored.contains("reset-password"))
        #expect(!stored.contains("ada@example.com"))
        #expect(try Binary.json(stored).keys.sorted() == ["sealed"])

        // The operator's views show that a mail waits, never what it says.
        let listed = String(
            decoding: try JSONEncoder().encode(try await harness.service.repositories.outbox.list(failedOnly: false)),
            as: UTF8.self)
        #expect(listed.contains("email.password_reset"))
        #expect(!listed.contains("token=") && !listed.contains("sealed"))

        // A box copied onto another row does not open there.
        try await harness.pool.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, body, payload, target, is_head)
            SELECT gen_random_uuid(), client_id, event_type, 'account:copy', body, payload, target, true FROM outbox WHERE target = 'email'
            """)
        // Claimed for sending: the mail as it must be sent, its link a live one-time token.
        let claimed = try await harness.service.repositories.outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(claimed.count == 2)
        let own = try #require(claimed.first { $0.eventID == eventID })
        let mail = try Binary.json(own.payload)
        #expect(mail["to"] as? String == "ada@example.com")
        let text = try #require(mail["text"] as? String)
        let start = try #require(text.range(of: "/account/reset-password?token="))
        let token = String(text[start.upperBound...].prefix { !$0.isWhitespace })
        let set = try await RawHTTP.request(
            port: port, method: "POST", path: "/account/reset-password",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Data("token=\(token)&password=correct-horse".utf8))
        #expect(set.status == 200, "\(set.text)")
        #expect(!stored.contains(token))
        let copy = try #require(claimed.first { $0.eventID != eventID })
        #expect(!copy.payload.contains("token="))
    }
}
