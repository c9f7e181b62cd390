import Foundation
import ReceiptCore

/// The rental periods of one-time products' purchase options, read with
/// `monetization.onetimeproducts.get` (`OneTimeProduct.purchaseOptions[].rentOption.rentalPeriod`)
/// and kept an hour per client, package and product on the shared expiring cache: a rental is
/// verified with one catalog read an hour, and one client's catalog never answers another's.
/// A purchase option the kept copy lacks (added since) is read again once.
struct RentalPeriods: Sendable {
    struct Key: Hashable, Sendable {
        let client: String
        let package: String
        let productID: String
    }

    /// Purchase option id → rental period (ISO 8601).
    typealias Periods = [String: String]

    let api: AndroidPublisherClient
    let now: @Sendable () -> Date
    let cache: ExpiringCache<Key, Periods>

    static let lifetime: TimeInterval = 3600
    static let maxProducts = 2048

    init(api: AndroidPublisherClient, now: @escaping @Sendable () -> Date) {
        self.api = api
        self.now = now
        cache = ExpiringCache(now: now, maxEntries: Self.maxProducts)
    }

    /// The rental period of `option` of `productID`, or nil when the catalog has none for it.
    /// Throws `StoreAPIError` when Google cannot be asked.
    func period(
        of option: String, productID: String, package: String, client: String?, key: ServiceAccountKey
    ) async throws -> String? {
        let cacheKey = Key(client: client ?? "", package: package, productID: productID)
        let fetch: @Sendable () async throws -> (Periods, usableUntil: Date) = { [api, now] in
            let product = try await api.oneTimeProduct(package: package, productID: productID, key: key)
            var periods: Periods = [:]
            for purchaseOption in product.purchaseOptions ?? [] {
                if let id = purchaseOption.purchaseOptionId, let period = purchaseOption.rentOption?.rentalPeriod {
                    periods[id] = period
                }
            }
            return (periods, now().addingTimeInterval(Self.lifetime))
        }
        let kept = try await cache.value(for: cacheKey, fetch: fetch)
        if let period = kept[option] { return period }
        await cache.invalidate(cacheKey) { $0[option] == nil }
        return try await cache.value(for: cacheKey, fetch: fetch)[option]
    }
}
