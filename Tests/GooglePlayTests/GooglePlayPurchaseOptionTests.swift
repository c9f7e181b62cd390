import Foundation
import GooglePlay
import GooglePlayTestSupport
import ReceiptCore
import TestSupport
import Testing

/// One-time products with purchase options and offers (Play Billing Library 8), read with
/// `purchases.productsv2` against the fake: a rental ends its option's rental period after the
/// purchase completed, a pre-order is pending until Google fulfils it, and nothing deprecated is asked.
@Suite struct GooglePlayPurchaseOptions {
    static let completed: Int64 = 1_796_000_000_000

    @Test func aRentalEndsItsOptionsRentalPeriodAfterCompletionReadOnceAnHourPerClient() async throws {
        let google = try FakeGooglePlay()
        try google.addOneTimeProduct(productID: "movie", rentals: ["rent-2d": "P2D", "rent-6h": "PT6H"], buys: ["buy"])
        try google.addProduct(
            token: "tok-rent-1", productID: "movie", orderID: "GPA.5000-0000-0000-00001",
            purchaseTimeMillis: Self.completed, purchaseOption: "rent-2d", offer: "launch-50", rent: true)
        try google.addProduct(
            token: "tok-rent-2", productID: "movie", orderID: "GPA.5000-0000-0000-00002",
            purchaseTimeMillis: Self.completed, purchaseOption: "rent-6h", rent: true)
        try google.addProduct(
            token: "tok-buy", productID: "movie", orderID: "GPA.5000-0000-0000-00003",
            purchaseTimeMillis: Self.completed, purchaseOption: "buy")
        let provider = try GooglePlayVerify.provider(google)
        let rental = try #require(
            try await provider.verify(evidence: "tok-rent-1", context: GooglePlayVerify.context()).first)
        let start = Date(timeIntervalSince1970: Double(Self.completed) / 1000)
        #expect(
            rental.productID == "movie" && rental.purchaseOptionID == "rent-2d"
                && rental.offer?.identifier == "launch-50")
        #expect(rental.purchaseDate == start)
        #expect(rental.expiresDate == start.addingTimeInterval(2 * 86_400))
        let shorter = try #require(
            try await provider.verify(evidence: "tok-rent-2", context: GooglePlayVerify.context()).first)
        #expect(shorter.expiresDate == start.addingTimeInterval(6 * 3600))
        #expect(google.hits("onetimeproducts") == 1, "the catalog is read once for the product")
        // A purchase to keep has no end, and needs no catalog read.
        let bought = try #require(
            try await provider.verify(evidence: "tok-buy", context: GooglePlayVerify.context()).first)
        #expect(bought.purchaseOptionID == "buy" && bought.expiresDate == nil)
        #expect(google.hits("onetimeproducts") == 1)
        // Another client's verification reads its own copy.
        _ = try await provider.verify(evidence: "tok-rent-1", context: GooglePlayVerify.context(clientID: "rgc_other"))
        #expect(google.hits("onetimeproducts") == 2)
        #expect(google.state.deprecatedCalls.get().isEmpty)
        await google.shutdown()
    }

    @Test func aRentalWhosePeriodCannotBeReadIsNotAPurchaseYet() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(
            token: "tok-rent-x", productID: "series", purchaseTimeMillis: Self.completed, purchaseOption: "rent-1w",
            rent: true)
        let provider = try GooglePlayVerify.provider(google)
        // The product is not in the catalog: no end can be given, so nothing is granted for ever.
        let refused = await GooglePlayVerify.refusal {
            _ = try await provider.verify(evidence: "tok-rent-x", context: GooglePlayVerify.context())
        }
        #expect(refused?.reason == "GOOGLE_INVALID_RESPONSE", "\(String(describing: refused))")
        // The option appears in the catalog: read again at once, not an hour later.
        try google.addOneTimeProduct(productID: "series", rentals: ["rent-1w": "P1W"])
        let rental = try #require(
            try await provider.verify(evidence: "tok-rent-x", context: GooglePlayVerify.context()).first)
        #expect(rental.expiresDate == Date(timeIntervalSince1970: Double(Self.completed) / 1000 + 7 * 86_400))
        await google.shutdown()
    }

    @Test func aPreorderIsPendingUntilGoogleFulfilsIt() async throws {
        let google = try FakeGooglePlay()
        try google.addProduct(
            token: "tok-pre", productID: "expansion", orderID: "GPA.5000-0000-0000-00009", state: 2,
            purchaseOption: "preorder", offer: "early-bird", preorder: true)
        let provider = try GooglePlayVerify.provider(google)
        for evidence in [
            "tok-pre", #"{"packageName":"com.example.game","productId":"expansion","purchaseToken":"tok-pre"}"#,
        ] {
            let refused = await GooglePlayVerify.refusal {
                _ = try await provider.verify(evidence: evidence, context: GooglePlayVerify.context())
            }
            #expect(refused?.reason == "PURCHASE_PENDING" && refused?.code == .verificationFailed)
        }
        try google.fulfil(token: "tok-pre", purchaseTimeMillis: Self.completed)
        let delivered = try #require(
            try await provider.verify(evidence: "tok-pre", context: GooglePlayVerify.context()).first)
        #expect(delivered.transactionID == "GPA.5000-0000-0000-00009")
        #expect(delivered.purchaseOptionID == "preorder" && delivered.offer?.identifier == "early-bird")
        #expect(delivered.expiresDate == nil)
        #expect(google.state.deprecatedCalls.get().isEmpty)
        await google.shutdown()
    }

    @Test(arguments: ["P7D", "PT48H", "P1W", "P1M", "P1DT12H", "PT90M"])
    func rentalPeriodsAreISO8601Durations(_ period: String) throws {
        let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let expected: [String: TimeInterval] = [
            "P7D": 7 * 86_400, "PT48H": 48 * 3600, "P1W": 7 * 86_400, "P1M": 31 * 86_400, "P1DT12H": 36 * 3600,
            "PT90M": 90 * 60,
        ]
        #expect(
            GooglePlayProvider.rentalEnd(period, from: start)
                == start.addingTimeInterval(try #require(expected[period])))
    }

    @Test(arguments: ["", "P", "7D", "PT", "P1H", "PxD", "P-1D", "P0D"])
    func whatIsNoDurationGivesNoEnd(_ period: String) {
        #expect(GooglePlayProvider.rentalEnd(period, from: Date(timeIntervalSince1970: 0)) == nil)
    }
}
