import ReceiptCore
import Testing

@testable import Steam

/// Amounts as "Supported Currencies" says Steam takes them: hundredths of every currency, some
/// only in steps.
@Suite struct SteamAmountsAndRefusals {
    @Test(
        arguments: [
            (1_990, "USD", 199), (120_000, "JPY", 12_000), (10_000, "IDR", 1_000), (20_000, "KRW", 2_000),
            (500_000, "VND", 50_000), (0, "EUR", 0),
        ] as [(Int64, String, Int64)])
    func convertsExactly(_ milliunits: Int64, _ currency: String, _ amount: Int64) {
        #expect(Steam.SteamMoney.amount(milliunits: milliunits, currency: currency) == amount)
    }

    @Test(
        arguments: [
            (1_995, "USD"), (120_500, "JPY"), (10_500, "IDR"), (15_990, "KRW"), (450_000, "VND"), (-10, "USD"),
        ] as [(Int64, String)])
    func refusesWhatDoesNotConvert(_ milliunits: Int64, _ currency: String) {
        #expect(Steam.SteamMoney.amount(milliunits: milliunits, currency: currency) == nil)
    }

    @Test func anOrderSteamCannotTakeIsRefusedBeforeItIsAsked() {
        func refused(_ change: (inout OrderRequest) -> Void) -> String? {
            var request = OrderRequest(
                orderID: "1", playerID: "p", storeAccount: "76561197960287930",
                items: [OrderItem(productID: "10", quantity: 1, unitPriceMilliunits: 990, description: "x")],
                currency: "USD")
            change(&request)
            do {
                _ = try SteamProvider.initParameters(request)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(refused { _ in } == nil)
        #expect(refused { $0.storeAccount = "player-7" } != nil, "a Steam ID is a 64-bit number")
        #expect(refused { $0.items[0].productID = "gems" } != nil, "an itemid is a uint32")
        #expect(refused { $0.items[0].productID = "4294967296" } != nil, "beyond uint32")
        #expect(refused { $0.items[0].quantity = 40_000 } != nil, "qty is an int16")
        #expect(refused { $0.items.append($0.items[0]) } != nil, "one line per item")
        #expect(refused { $0.items[0].description = String(repeating: "d", count: 129) } != nil)
        #expect(refused { $0.session = "web" } != nil, "a web session needs the player's address")
        #expect(
            refused {
                $0.session = "web"; $0.ipAddress = "203.0.113.9"
            } == nil)
        #expect(refused { $0.session = "browser" } != nil)
    }

    @Test func eachLineTakesItsOwnStatusInAPartialRefundAndTheOrdersOtherwise() {
        #expect(SteamProvider.reversal(order: "PartialRefund", item: "Refunded") == "Refunded")
        #expect(SteamProvider.reversal(order: "PartialRefund", item: "Succeeded") == nil)
        #expect(SteamProvider.reversal(order: "Chargedback", item: "Succeeded") == "Chargedback")
        #expect(SteamProvider.reversal(order: "RefundedFriendlyFraud", item: nil) == "RefundedFriendlyFraud")
        #expect(SteamProvider.reversal(order: "Succeeded", item: "Succeeded") == nil)
        #expect(SteamProvider.reversal(order: "SomethingNew", item: nil) == nil, "an unknown status moves nothing")
    }

    @Test func everyDocumentedErrorCodeIsARefusalOrSteamsTroubleNeverSuccess() {
        for code in [2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 100, 101, 102, 103, 104, 105, 106, 107, 999] {
            let error = SteamAPIErrors.failure(code: code, description: "d", request: "InitTxn")
            #expect(error.storeCode == String(code))
            #expect(error.kind == ([2, 4].contains(code) ? .unavailable : .refused), "code \(code)")
        }
        #expect(
            SteamAPIErrors.failure(code: 101, description: nil, request: "AuthenticateUserTicket").reason
                == "STEAM_TICKET_REFUSED")
        #expect(SteamAPIErrors.answered(403, request: "QueryTxn", retryAfter: nil).kind == .credentialsRefused)
        #expect(SteamAPIErrors.answered(503, request: "QueryTxn", retryAfter: nil).kind == .unavailable)
    }
}
