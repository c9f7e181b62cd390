import Foundation
import ReceiptCore

/// Orders read by id with `orders.batchGet` (Android Publisher API v3, `Order`): reconciliation
/// confirms what an order became where Google keeps it. An order Google does not return (unknown,
/// of another package, or a service account without access to the Orders API) leaves the
/// decision to what the purchase itself and the voided-purchases list say.
extension GooglePlayProvider {
    /// `Order.state`, typed; a state Google adds later is kept raw.
    enum OrderState: Equatable {
        case pending, processed, canceled, pendingRefund, partiallyRefunded, refunded, other(String)

        init(_ raw: String?) {
            switch raw {
            case "PENDING"?: self = .pending
            case "PROCESSED"?: self = .processed
            case "CANCELED"?: self = .canceled
            case "PENDING_REFUND"?: self = .pendingRefund
            case "PARTIALLY_REFUNDED"?: self = .partiallyRefunded
            case "REFUNDED"?: self = .refunded
            default: self = .other(raw ?? "")
            }
        }

        /// The buyer's money went back, all of it (a refund, or a cancellation after payment).
        var isVoid: Bool { self == .refunded || self == .canceled }
    }

    /// At most this many order ids in one `orders.batchGet` (Google's limit).
    static let ordersPerBatch = 1000

    /// The orders of `orderIDs` Google returns, by id; empty when Google answers that it cannot
    /// return them (one unknown id fails the whole request, so a batch that fails so is asked
    /// again id by id, up to `maxSingles`). Throws `StoreAPIError` only when Google is unavailable.
    func orders(
        _ orderIDs: [String], package: String, key: ServiceAccountKey, maxSingles: Int = 20
    ) async throws -> [String: BatchGetOrdersResponse.Order] {
        let distinct = Array(Set(orderIDs)).sorted()
        var found: [String: BatchGetOrdersResponse.Order] = [:]
        var start = 0
        while start < distinct.count {
            let batch = Array(distinct[start..<min(start + Self.ordersPerBatch, distinct.count)])
            start += batch.count
            do {
                for order in try await api.orders(package: package, orderIDs: batch, key: key) {
                    if let id = order.orderId { found[id] = order }
                }
            } catch let error as StoreAPIError where Self.ordersUnavailableHere(error) {
                guard batch.count > 1, batch.count <= maxSingles else { continue }
                for id in batch {
                    do {
                        if let order = try await api.orders(package: package, orderIDs: [id], key: key).first {
                            found[id] = order
                        }
                    } catch let error as StoreAPIError where Self.ordersUnavailableHere(error) {
                        continue
                    }
                }
            }
        }
        return found
    }

    /// A refusal that says Google will not return these orders (rather than that Google is down).
    static func ordersUnavailableHere(_ error: StoreAPIError) -> Bool {
        [.notFound, .refused, .credentialsRefused].contains(error.kind)
    }

    /// When the order's money went back, as its history says.
    static func voidTime(of order: BatchGetOrdersResponse.Order) -> Date? {
        let history = order.orderHistory
        return GoogleTime.rfc3339(history?.refundEvent?.eventTime)
            ?? GoogleTime.rfc3339(history?.cancellationEvent?.eventTime)
            ?? GoogleTime.rfc3339(order.lastEventTime)
    }
}
