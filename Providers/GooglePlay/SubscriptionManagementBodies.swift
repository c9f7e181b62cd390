import Foundation

// The request and answer bodies of `purchases.subscriptionsv2.revoke`, `.cancel` and `.defer`, as
// the Android Publisher API v3 reference names them (`RevokeSubscriptionPurchaseRequest`,
// `CancelSubscriptionPurchaseRequest`, `DeferSubscriptionPurchaseRequest`).

/// `{"revocationContext": {"fullRefund": {}}}` or `{"revocationContext": {"proratedRefund": {}}}`.
struct SubscriptionRevocationBody: Encodable {
    enum Refund: String, Sendable { case full, prorated }
    struct Empty: Encodable {}
    struct Context: Encodable {
        var fullRefund: Empty?
        var proratedRefund: Empty?
    }
    let revocationContext: Context

    init(_ refund: Refund) {
        revocationContext =
            switch refund {
            case .full: Context(fullRefund: Empty())
            case .prorated: Context(proratedRefund: Empty())
            }
    }
}

/// The operator stops renewals on the developer's behalf: `DEVELOPER_REQUESTED_STOP_PAYMENTS`.
struct SubscriptionCancellationBody: Encodable {
    struct Context: Encodable { var cancellationType = "DEVELOPER_REQUESTED_STOP_PAYMENTS" }
    var cancellationContext = Context()
}

/// `deferralContext`: a `Duration` as Google writes one (`"86400s"`) and the subscription's etag.
struct SubscriptionDeferralBody: Encodable {
    struct Context: Encodable {
        let etag: String
        let deferDuration: String
    }
    let deferralContext: Context

    init(seconds: Int64, etag: String) {
        deferralContext = Context(etag: etag, deferDuration: "\(seconds)s")
    }
}

/// `DeferSubscriptionPurchaseResponse`: each item's new expiry.
struct SubscriptionDeferralAnswer: Codable, Sendable {
    struct Item: Codable, Sendable {
        var productId: String?
        var expiryTime: String?
    }
    var itemExpiryTimeDetails: [Item]?
}
