import Foundation
import HTTPServer

/// `purchases.subscriptionsv2` revoke, cancel and defer in the fake, checked as the Android
/// Publisher API v3 reference documents their bodies, each changing the subscription as Google
/// then reads it: revoked ends now (its order refunded), canceled stops renewing, deferred moves
/// its expiry (only with the etag last read, which then changes).
extension FakeGooglePlay {
    static func changeSubscription(_ request: HTTPRequest, state: State) throws -> HTTPResponse {
        let parts = try request.parameter("action").split(separator: ":", maxSplits: 1).map(String.init)
        guard parts.count == 2, ["revoke", "cancel", "defer"].contains(parts[1]) else { return notFound() }
        let (token, verb) = (parts[0], parts[1])
        guard let entry = state.subscriptions.get()[token], entry.package == (try request.parameter("package")),
            var subscription = try JSONSerialization.jsonObject(with: Data(entry.json.utf8)) as? [String: Any],
            var items = subscription["lineItems"] as? [[String: Any]], !items.isEmpty
        else { return notFound() }
        let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] ?? [:]
        let invalid = googleError(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
        var answer = "{}"
        switch verb {
        case "revoke":
            let context = body["revocationContext"] as? [String: Any] ?? [:]
            guard context.count == 1,
                context["fullRefund"] is [String: Any] || context["proratedRefund"] is [String: Any]
            else { return invalid }
            subscription["subscriptionState"] = "SUBSCRIPTION_STATE_EXPIRED"
            items[0]["expiryTime"] = rfc3339(millis: Int64(Date().timeIntervalSince1970 * 1000))
            if let order = items[0]["latestSuccessfulOrderId"] as? String {
                let package = entry.package
                state.orders.update { orders in
                    guard let kept = orders[order],
                        var object = try? JSONSerialization.jsonObject(with: Data(kept.json.utf8)) as? [String: Any]
                    else { return }
                    object["state"] = "REFUNDED"
                    if let text = try? text(object) { orders[order] = (package, text) }
                }
            }
        case "cancel":
            let context = body["cancellationContext"] as? [String: Any] ?? [:]
            guard
                ["USER_REQUESTED_STOP_RENEWALS", "DEVELOPER_REQUESTED_STOP_PAYMENTS"].contains(
                    context["cancellationType"] as? String ?? "")
            else { return invalid }
            subscription["subscriptionState"] = "SUBSCRIPTION_STATE_CANCELED"
            items[0]["autoRenewingPlan"] = ["autoRenewEnabled": false]
        default:
            let context = body["deferralContext"] as? [String: Any] ?? [:]
            guard let etag = context["etag"] as? String, let duration = context["deferDuration"] as? String,
                duration.hasSuffix("s"), let seconds = Double(duration.dropLast()), seconds >= 86_400
            else { return invalid }
            guard etag == subscription["etag"] as? String else {
                return googleError(409, "ABORTED", "The etag does not match the latest subscription.")
            }
            guard let expiry = (items[0]["expiryTime"] as? String).flatMap(parseTime) else { return invalid }
            let later = rfc3339(millis: Int64((expiry.timeIntervalSince1970 + seconds) * 1000))
            items[0]["expiryTime"] = later
            subscription["etag"] = "etag-\(UUID().uuidString.prefix(8))"
            answer = try text([
                "itemExpiryTimeDetails": [["productId": items[0]["productId"] ?? "", "expiryTime": later]]
            ])
        }
        subscription["lineItems"] = items
        let updated = try text(subscription)
        state.subscriptions.update { $0[token] = (entry.package, updated) }
        state.subscriptionChanges.update {
            $0.append("\(verb) \(token) \(String(decoding: request.body, as: UTF8.self))")
        }
        return json(200, answer)
    }

    /// Every value of `name` in a request target's query (`orderIds=a&orderIds=b`).
    static func queryValues(_ target: String, _ name: String) -> [String] {
        guard let query = target.split(separator: "?", maxSplits: 1).dropFirst().first else { return [] }
        return query.split(separator: "&").compactMap { pair in
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, parts[0] == name else { return nil }
            return parts[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
    }

    static func parseTime(_ text: String) -> Date? {
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }
}
