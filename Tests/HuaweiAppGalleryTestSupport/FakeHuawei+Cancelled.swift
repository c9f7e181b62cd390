package import Foundation
import HTTPServer
import OpenSSLCrypto
import TestSupport

/// The cancelled or refunded purchases list as Huawei serves it: `startAt` to `endAt` (epoch
/// milliseconds, start included), `type` 0 one-time products only or 1 with subscriptions,
/// `maxRows` per page, `continuationToken` for the page after (the window then ignored), and
/// `cancelledPurchaseList` a JSON string holding the records.
extension FakeHuawei {
    /// Lists a purchase as cancelled or refunded at `cancelledAt` (`source` 0 user, 1 developer, 2
    /// Huawei; `reason` as Huawei numbers them). `extra` adds or replaces record fields.
    package func addCancelled(
        token: String, productID: String = "gems100", orderID: String,
        cancelledAt: Date = Date().addingTimeInterval(-3600),
        purchaseTime: Int64 = 1_716_389_123_000, source: Int = 0, reason: Int = 1, subscription: Bool = false,
        extra: [String: Any] = [:]
    ) throws {
        let millis = Int64(cancelledAt.timeIntervalSince1970 * 1000)
        var object: [String: Any] = [
            "orderId": orderID, "productId": productID, "purchaseToken": token, "purchaseTime": purchaseTime,
            "cancelledTime": millis, "cancelledSource": source, "cancelledReason": reason,
        ]
        object.merge(extra) { $1 }
        let record = CancelledRecord(cancelledTime: millis, subscription: subscription, json: try Self.text(object))
        state.cancelled.update { records in
            records.append(record)
            records.sort { $0.cancelledTime < $1.cancelledTime }
        }
    }

    /// The cancelled-list requests received, their values as text.
    package var cancelledQueries: [[String: String]] { state.cancelledQueries.get() }

    static func cancelledList(_ state: State, body: Data) throws -> HTTPResponse {
        let fields = (try? JSONSerialization.jsonObject(with: body)) as? [String: Any] ?? [:]
        state.cancelledQueries.update { $0.append(fields.mapValues { "\($0)" }) }
        func invalid(_ message: String) -> HTTPResponse {
            json(200, #"{"responseCode":"5","responseMessage":"\#(message)"}"#)
        }
        let window: (startAt: Int64, endAt: Int64, type: Int, offset: Int)
        let paging = state.cancelledPaging.get()
        if paging == .emptyPagesWithTokens, let token = fields["continuationToken"] as? String, !token.isEmpty {
            return json(
                200,
                try text([
                    "responseCode": "0", "responseMessage": "success", "cancelledPurchaseList": "[]",
                    "continuationToken": "cont." + Hex.encode(SecureRandom.bytes(8)),
                ]))
        }
        if paging == .repeatsToken, fields["continuationToken"] as? String == "cont.stuck" {
            window = (0, Int64.max, 1, 0)
        } else if let token = fields["continuationToken"] as? String, !token.isEmpty {
            guard let saved = state.continuations.get()[token] else { return invalid("continuationToken is invalid") }
            window = saved
        } else {
            guard let startAt = (fields["startAt"] as? NSNumber)?.int64Value,
                let endAt = (fields["endAt"] as? NSNumber)?.int64Value,
                endAt > startAt
            else { return invalid("startAt and endAt must be numbers, endAt after startAt") }
            let type = (fields["type"] as? NSNumber)?.intValue ?? 0
            guard type == 0 || type == 1 else { return invalid("type is invalid") }
            window = (startAt, endAt, type, 0)
        }
        let maxRows = (fields["maxRows"] as? NSNumber)?.intValue ?? 1000
        guard (1...1000).contains(maxRows) else { return invalid("maxRows is invalid") }
        let listed = state.cancelled.get().filter {
            (window.startAt..<window.endAt).contains($0.cancelledTime) && (window.type == 1 || !$0.subscription)
        }
        let page = listed.dropFirst(window.offset).prefix(min(maxRows, state.cancelledPageSize.get()))
        var answer: [String: Any] = [
            "responseCode": "0", "responseMessage": "success",
            "cancelledPurchaseList": "[" + page.map(\.json).joined(separator: ",") + "]",
        ]
        let next = window.offset + page.count
        if paging == .repeatsToken {
            answer["continuationToken"] = "cont.stuck"
        } else if paging == .emptyPagesWithTokens {
            answer["continuationToken"] = "cont." + Hex.encode(SecureRandom.bytes(8))
        } else if next < listed.count {
            let token = "cont." + Hex.encode(SecureRandom.bytes(8))
            state.continuations.update { $0[token] = (window.startAt, window.endAt, window.type, next) }
            answer["continuationToken"] = token
        }
        return json(200, try text(answer))
    }
}
