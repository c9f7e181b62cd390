package import Foundation
import Xsolla

/// Xsolla's webhooks and report records as its documentation shows them, signed as Xsolla signs
/// them. Amounts are decimal numbers of the currency, as Xsolla writes them.
extension FakeXsolla {
    /// A webhook as it reaches the service: the raw body and its headers.
    package struct Webhook: Sendable {
        package let body: Data
        package let headers: [String: String]

        /// The same body under another signature header (a forger's, or none).
        package func with(authorization: String?) -> Webhook {
            var headers = headers
            headers["authorization"] = authorization
            return Webhook(body: body, headers: headers)
        }

        /// The body changed after it was signed.
        package func tampered() -> Webhook {
            let text = String(decoding: body, as: UTF8.self).replacingOccurrences(of: "9.99", with: "0.01")
            return Webhook(body: Data(text.utf8), headers: headers)
        }
    }

    /// `object` signed with `secret` (the project's, unless a test plays a forger).
    package static func signed(_ object: [String: Any], secret: String = webhookSecret) throws -> Webhook {
        let body = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return Webhook(
            body: body,
            headers: [
                "authorization": XsollaSignature.header(body: body, secret: secret),
                "content-type": "application/json",
            ])
    }

    package static func settings(_ project: String) -> [String: Any] {
        ["project_id": Int(project) ?? 0, "merchant_id": Int(merchantID) ?? 0]
    }

    package static func userValidation(player: String, project: String = projectID) throws -> Webhook {
        try signed([
            "notification_type": "user_validation", "settings": settings(project),
            "user": ["id": player, "email": "player@example.com", "ip": "127.0.0.1", "country": "US"],
        ])
    }

    /// A Pay Station `payment` of `items` (SKU and how many), or of a subscription's period.
    package static func payment(
        transactionID: Int64, player: String, items: [(sku: String, quantity: Int)] = [("gems.100", 1)],
        amount: Double = 9.99, currency: String = "USD", dryRun: Bool = false, project: String? = projectID,
        subscription: [String: Any]? = nil, type: String = "payment", refundCode: Int? = nil,
        customParameters: [String: String] = ["parameter1": "value1"], vat: (amount: Double, percent: Int)? = nil
    ) throws -> Webhook {
        var transaction: [String: Any] = [
            "id": transactionID, "external_id": "game-\(transactionID)", "payment_date": "2026-12-01T10:00:00+00:00",
            "payment_method": 1380, "agreement": 1,
        ]
        if dryRun { transaction["dry_run"] = 1 }
        var purchase: [String: Any] = ["total": ["currency": currency, "amount": amount]]
        if !items.isEmpty {
            purchase["virtual_items"] = [
                "items": items.map { ["sku": $0.sku, "amount": $0.quantity] }, "currency": currency, "amount": amount,
            ]
        }
        if let subscription { purchase["subscription"] = subscription }
        var object: [String: Any] = [
            "notification_type": type, "purchase": purchase, "transaction": transaction,
            "user": ["id": player, "email": "player@example.com", "phone": "18777976552", "country": "US"],
            "payment_details": ["payment": ["currency": currency, "amount": amount]],
            "custom_parameters": customParameters,
        ]
        if let vat {
            // The VAT within what the user paid (EU buyers), beside the payment.
            object["payment_details"] = [
                "payment": ["currency": currency, "amount": amount],
                "vat": ["currency": currency, "amount": vat.amount, "percent": vat.percent],
                "sales_tax": ["currency": currency, "amount": 0, "percent": 0],
            ]
        }
        if let project { object["settings"] = settings(project) }
        if let refundCode {
            object["refund_details"] = ["code": refundCode, "reason": "Cancellation by the user request"]
        }
        return try signed(object)
    }

    /// A Web Shop `order_paid` (or `order_canceled`) as projects made since 2025 get it: the items,
    /// the order, the user, and the payment (or refund) under `billing`. `billing: false` plays an
    /// older project's order webhook, which names the transaction only as the order's `invoice_id`.
    package static func order(
        _ type: String = "order_paid", orderID: Int64, transactionID: Int64, player: String,
        items: [(sku: String, quantity: Int, amount: String)], currency: String = "USD", sandbox: Bool = false,
        billing: Bool = true, project: String = projectID
    ) throws -> Webhook {
        var object: [String: Any] = [
            "notification_type": type,
            "items": items.map {
                [
                    "sku": $0.sku, "type": "virtual_good", "is_pre_order": false, "quantity": $0.quantity,
                    "amount": $0.amount, "promotions": [],
                ] as [String: Any]
            },
            "order": [
                "id": orderID, "mode": sandbox ? "sandbox" : "default", "currency_type": "real", "currency": currency,
                "amount": "\(items.compactMap { Double($0.amount) }.reduce(0, +))", "status": "paid",
                "platform": "xsolla", "invoice_id": "\(transactionID)",
            ] as [String: Any],
            "user": ["external_id": player, "email": "player@example.com"],
            "custom_parameters": [:] as [String: Any],
        ]
        if billing {
            var transaction: [String: Any] = [
                "id": transactionID, "payment_date": "2026-12-01T10:00:00+00:00", "payment_method": 1,
            ]
            if sandbox { transaction["dry_run"] = 1 }
            var inner: [String: Any] = [
                "notification_type": type == "order_paid" ? "payment" : "refund", "settings": settings(project),
                "transaction": transaction, "purchase": ["total": ["currency": currency, "amount": 1]],
                "user": ["id": player, "email": "player@example.com"],
            ]
            if type != "order_paid" { inner["refund_details"] = ["code": 1, "reason": "Cancellation"] }
            object["billing"] = inner
        }
        return try signed(object)
    }

    /// A subscription webhook (`create_subscription`, `update_subscription`, `cancel_subscription`,
    /// `non_renewal_subscription`).
    package static func subscription(
        _ type: String, subscriptionID: String, planID: String = "vip.monthly", player: String,
        nextCharge: String? = nil, end: String? = nil, project: String = projectID
    ) throws -> Webhook {
        var subscription: [String: Any] = [
            "plan_id": planID, "subscription_id": subscriptionID, "product_id": "VIP",
            "date_create": "2026-12-01T10:00:00+00:00",
        ]
        if let nextCharge { subscription["date_next_charge"] = nextCharge }
        if let end { subscription["date_end"] = end }
        return try signed([
            "notification_type": type, "settings": settings(project), "user": ["id": player, "name": "Player"],
            "subscription": subscription,
        ])
    }

    /// A record of the transactions report, as "Find transactions" answers it.
    package static func record(
        transactionID: Int64, player: String, items: [(sku: String, quantity: Int)] = [("gems.100", 1)],
        status: String = "done", amount: Double = 9.99, currency: String = "USD", dryRun: Bool = false,
        project: String = projectID, externalPlayer: String? = nil
    ) -> [String: Any] {
        var user: [String: Any] = ["id": player, "email": "player@example.com", "country": "US"]
        if let externalPlayer { user["external_id"] = externalPlayer }
        return [
            "transaction": [
                "id": transactionID, "dry_run": dryRun ? 1 : 0, "status": status, "create_date": "2026-12-01",
                "external_id": "game-\(transactionID)", "project": ["id": Int(project) ?? 0, "name": "Example"],
                "payment_method": ["id": 1, "name": "PayPal"], "is_refund_allowed": 1,
            ] as [String: Any],
            "user": user,
            "purchase": [
                // A sale that lists no item (a Web Shop order's payment) has `virtual_items: null`.
                "virtual_items": items.isEmpty
                    ? NSNull() as Any : ["items": items.map { ["sku": $0.sku, "amount": $0.quantity] }] as Any,
                "simple_checkout": ["amount": amount, "currency": currency],
            ] as [String: Any],
            "payment_details": ["payment": ["amount": amount, "currency": currency]],
        ]
    }
}
