import Foundation
import ReceiptCore
import Stripe
import StripeTestSupport
import TestSupport
import Testing

private let oraclePython = ProcessInfo.processInfo.environment["RECEIPTGATE_ORACLE_PYTHON"]

/// Stripe's official Python library (`stripe` on PyPI) as an independent oracle: it checks the
/// fake's signatures, signs payloads our verifier must accept (and, tampered or stale, refuse),
/// and reads the fake's objects, so the fake speaks Stripe's shapes and not only our reading of
/// them. Runs where RECEIPTGATE_ORACLE_PYTHON names a Python with the library (scripts/test.sh).
@Suite(
    .enabled(
        if: oraclePython != nil || ProcessInfo.processInfo.environment["CI"] != nil,
        "set RECEIPTGATE_ORACLE_PYTHON (scripts/test.sh does) to run Stripe's library as the oracle"))
struct StripeOracleTests {
    static var python: String? { oraclePython }

    /// The oracle's answer to each case, by id.
    static func oracle(_ cases: [[String: Any]]) async throws -> [String: [String: Any]] {
        let python = try #require(python, "RECEIPTGATE_ORACLE_PYTHON must be set in CI")
        let input = TestDatabase.temporaryDirectory("stripe-oracle").appendingPathComponent("cases.jsonl")
        let lines = try cases.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        try (lines.joined(separator: "\n") + "\n").write(to: input, atomically: true, encoding: .utf8)
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Oracle/stripe_oracle.py").path
        let result = try await ChildProcess.run(
            "/bin/sh", ["-c", "exec \"$0\" \"$1\" < \"$2\"", python, script, input.path],
            environment: ["PATH": "/usr/bin:/bin", "HOME": "/tmp"])
        #expect(result.status == 0, "the oracle failed: \(result.stderr.suffix(2000))")
        var answers: [String: [String: Any]] = [:]
        for line in result.stdout.split(separator: "\n") {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            answers[try #require(object["id"] as? String)] = object
        }
        #expect(answers.count == cases.count, "the oracle answered \(answers.count) of \(cases.count) cases")
        return answers
    }

    @Test func stripesLibraryAcceptsTheFakesSignaturesAndRefusesBrokenOnes() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        let good = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        let payload = String(decoding: good.body, as: UTF8.self)
        // The fake's clock is this machine's, which the library reads for the tolerance.
        let cases: [[String: Any]] = [
            [
                "id": "good", "op": "verify", "payload": payload, "header": good.signature,
                "secret": FakeStripe.webhookSecret, "tolerance": 300,
            ],
            [
                "id": "other-secret", "op": "verify", "payload": payload, "header": good.signature,
                "secret": "whsec_other", "tolerance": 300,
            ],
            [
                "id": "tampered", "op": "verify", "payload": payload + " ", "header": good.signature,
                "secret": FakeStripe.webhookSecret, "tolerance": 300,
            ],
            [
                "id": "stale", "op": "verify", "payload": payload,
                "header": try FakeStripe.signatureHeader(body: good.body, timestamp: harness.fake.unixNow - 600),
                "secret": FakeStripe.webhookSecret, "tolerance": 300,
            ],
        ]
        let answers = try await Self.oracle(cases)
        #expect(answers["good"]?["accepted"] as? Bool == true)
        #expect(answers["good"]?["event_id"] as? String == good.id)
        #expect(answers["good"]?["type"] as? String == "checkout.session.completed")
        for refused in ["other-secret", "tampered", "stale"] {
            #expect(answers[refused]?["accepted"] as? Bool == false, "\(refused) must be refused by the library")
        }
    }

    @Test func ourVerifierAcceptsWhatStripesLibrarySignsAndRefusesItTamperedOrStale() async throws {
        let harness = try StripeHarness()
        let sale = harness.fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199)])
        let event = try harness.fake.webhook("checkout.session.completed", about: sale.session)
        let payload = String(decoding: event.body, as: UTF8.self)
        let now = harness.fake.unixNow
        let answers = try await Self.oracle([
            ["id": "now", "op": "sign", "payload": payload, "secret": FakeStripe.webhookSecret, "timestamp": now],
            [
                "id": "old", "op": "sign", "payload": payload, "secret": FakeStripe.webhookSecret,
                "timestamp": now - 301,
            ],
            ["id": "other", "op": "sign", "payload": payload, "secret": "whsec_notTheEndpoints", "timestamp": now],
        ])
        func header(_ id: String) throws -> [String: String] {
            ["stripe-signature": try #require(answers[id]?["header"] as? String)]
        }
        let accepted = try await harness.receive(event, headers: try header("now"))
        #expect(accepted.count == 1)
        let tampered = FakeStripe.Webhook(id: event.id, body: event.body + Data("\n".utf8), signature: "")
        #expect(
            await rejection { _ = try await harness.receive(tampered, headers: try header("now")) }?.kind == .forged)
        #expect(
            await rejection { _ = try await harness.receive(event, headers: try header("old")) }?.reason
                == "STALE_SIGNATURE")
        #expect(await rejection { _ = try await harness.receive(event, headers: try header("other")) }?.kind == .forged)
    }

    @Test func stripesLibraryReadsTheFakesObjectsAsStripesOwn() async throws {
        let fake = try FakeStripe()
        let sale = fake.sale(player: "p", lines: [.init("prod_gems", unitAmount: 199, quantity: 2, tax: 92)])
        fake.refund(charge: sale.charge, amount: 100)
        let dispute = fake.dispute(charge: sale.charge)
        let subscribed = fake.subscribe(player: "p", product: "prod_pass", unitAmount: 499, taxPercent: 20)
        let event = fake.event("invoice.paid", about: subscribed.firstInvoice)
        let invoicePayment = try #require(
            fake.state.objects.get().values.compactMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
                .first { $0["object"] as? String == "invoice_payment" })
        func text(_ object: Any) throws -> String {
            String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        }
        let lineItems: [String: Any] = [
            "object": "list", "has_more": false, "url": "/v1/checkout/sessions/\(sale.session)/line_items",
            "data": sale.lineItems.compactMap { fake.object($0) },
        ]
        let cases: [(String, Any, String, [String])] = [
            (
                "session", try #require(fake.object(sale.session)), "Session",
                ["payment_status", "mode", "client_reference_id", "payment_intent"]
            ),
            (
                "line_items", lineItems, "ListObject",
                ["data.0.price.product", "data.0.quantity", "data.0.id", "data.0.amount_total", "data.0.amount_tax"]
            ),
            (
                "charge", try #require(fake.object(sale.charge)), "Charge",
                ["amount_refunded", "refunded", "payment_intent", "refunds.data.0.amount"]
            ),
            ("dispute", try #require(fake.object(dispute)), "Dispute", ["charge", "reason", "status", "amount"]),
            (
                "subscription", try #require(fake.object(subscribed.subscription)), "Subscription",
                ["status", "items.data.0.current_period_end", "items.data.0.price.product", "latest_invoice"]
            ),
            (
                "invoice", try #require(fake.object(subscribed.firstInvoice)), "Invoice",
                [
                    "parent.subscription_details.subscription", "lines.data.0.period.end",
                    "lines.data.0.pricing.price_details.product", "billing_reason", "lines.data.0.amount",
                    "lines.data.0.taxes.0.amount", "lines.data.0.taxes.0.tax_behavior",
                ]
            ),
            ("invoice_payment", invoicePayment, "InvoicePayment", ["invoice", "payment.payment_intent"]),
            ("event", try #require(fake.object(event)), "Event", ["type", "data.object.id"]),
        ]
        let answers = try await Self.oracle(
            try cases.map { ["id": $0.0, "op": "construct", "object": try text($0.1), "fields": $0.3] })
        for (id, _, expectedClass, fields) in cases {
            let answer = try #require(answers[id])
            #expect(answer["class"] as? String == expectedClass, "\(id) is read as \(answer["class"] ?? "?")")
            let read = answer["fields"] as? [String: Any] ?? [:]
            for field in fields {
                let value = read[field]
                #expect(
                    !(value is NSNull) && !((value as? String)?.hasPrefix("missing") ?? false),
                    "\(id).\(field) is not where Stripe's library reads it: \(value ?? "nothing")")
            }
        }
        #expect(
            (answers["invoice"]?["fields"] as? [String: Any])?["parent.subscription_details.subscription"] as? String
                == subscribed.subscription)
    }
}
