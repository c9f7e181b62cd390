import Foundation
import Postgres
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// A sealed e-mail that does not open when claimed (or a message with no body) is sent as
/// nothing, and the row says why: no stand-in body (once `{}`, which the mailer then called "not
/// an e-mail message").
@Suite struct OutboxMailOpening {
    @Test func aMailThatDoesNotOpenCarriesItsReasonAndNoBody() async throws {
        let harness = try await VerifyHarness.start()  // no SMTP: no worker claims mail meanwhile
        defer { harness.stop() }
        let outbox = try await Self.queueMail(
            #"{"subject":"Hello","text":"Your code is 123456","to":"ada@example.com"}"#, as: "mail:1", harness)
        // The sealed box copied onto another row: bound to its own event id, it does not open there.
        try await harness.pool.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, body, payload, target, is_head)
            SELECT gen_random_uuid(), client_id, event_type, 'mail:copy', body, payload, target, true FROM outbox WHERE target = 'email'
            """)
        let claimed = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(claimed.count == 2)
        let own = try #require(claimed.first { $0.unopened == nil })
        #expect(own.payload.contains("ada@example.com"))
        let copy = try #require(claimed.first { $0.unopened != nil })
        #expect(copy.payload.isEmpty)
        #expect(copy.unopened?.hasPrefix("the sealed e-mail did not open") == true)
    }

    /// A message whose body is nowhere (not in `outbox_bodies`, not in its row) is claimed as
    /// nothing with its reason, and does not take the rest of its claim down with it.
    @Test func aMessageWithNoBodyIsClaimedWithItsReasonBesideTheRest() async throws {
        let harness = try await VerifyHarness.start()  // no SMTP: no worker claims mail meanwhile
        defer { harness.stop() }
        let outbox = try await Self.queueMail(
            #"{"subject":"Hello","text":"Hi","to":"ada@example.com"}"#, as: "mail:kept", harness)
        let clientID = harness.client.clientID
        try await harness.pool.execute(
            """
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, target, is_head)
            VALUES (gen_random_uuid(), \(clientID), 'email.test', 'mail:bodiless', 'email', true)
            """)
        let claimed = try await outbox.claim(targets: [.email], limit: 10, lease: 60)
        #expect(claimed.count == 2)
        let kept = try #require(claimed.first { $0.aggregateKey == "mail:kept" })
        #expect(kept.unopened == nil && kept.payload.contains("ada@example.com"))
        let bodiless = try #require(claimed.first { $0.aggregateKey == "mail:bodiless" })
        #expect(bodiless.payload.isEmpty)
        #expect(bodiless.unopened == "the message's body was not found")
    }

    /// Queues `body` as an e-mail, sealed as the service seals one; the harness's outbox.
    static func queueMail(_ body: String, as key: String, _ harness: VerifyHarness) async throws -> OutboxRepository {
        let outbox = harness.service.repositories.outbox
        let mail = OutboxMessage(
            clientID: harness.client.clientID, target: .email, type: "email.test", aggregateKey: key,
            body: Data(body.utf8))
        try await harness.pool.withTransaction {
            try OutboxRepository.enqueue(mail, sealingMailWith: outbox.secrets, on: $0)
        }
        return outbox
    }
}
