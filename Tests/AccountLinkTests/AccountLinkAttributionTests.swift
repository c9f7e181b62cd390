import AccountLink
import Foundation
import PluginTestSupport
import ReceiptCore
import Testing

/// `/iap`'s `aflyr` object, kept with the account as the app sent it (keys sorted), refused when
/// its `apple_search_ads` is not an object, or when it passes 8 KiB written out.
@Suite struct AccountLinkAttributionTests {
    typealias Flow = AccountLinkFlowTests

    static func iap(_ core: FakeCore, aflyr: String) async -> RouteResponse {
        let body =
            #"{"apple":{"bundle_id":"com.example.game","subscription_transaction_jws":"jws-1001"},"aflyr":\#(aflyr)}"#
        return await core.call(AccountLink(), "POST", "/iap", body: Data(body.utf8), headers: Flow.headers)
    }

    @Test func theObjectIsKeptAsSentWithItsKeysSorted() async throws {
        let core = Flow.core()
        let response = await Self.iap(
            core,
            aflyr:
                #"{"referrer_id":"ref/1","apple_search_ads":{"campaign":{"id":42,"ratio":0.5},"keyword":"é"},"tags":[true,null]}"#
        )
        #expect(response.status == 200)
        let token = try #require(response.object["access_token"] as? String)
        let account = try #require(try await core.accounts.account(id: try await Flow.sub(core, token)))
        let kept = try #require(account.attribution)
        #expect(
            String(decoding: kept, as: UTF8.self)
                == #"{"apple_search_ads":{"campaign":{"id":42,"ratio":0.5},"keyword":"é"},"referrer_id":"ref\/1","tags":[true,null]}"#
        )
    }

    @Test(arguments: [
        (#"{"apple_search_ads":"x"}"#, "field 'aflyr.apple_search_ads' has the wrong type (expected object)"),
        (#"{"apple_search_ads":null}"#, "field 'aflyr.apple_search_ads' has the wrong type (expected object)"),
        // 4,092 slashes are 8,184 bytes written out (each escaped), past 8 KiB with the key.
        ("{\"note\":\"\(String(repeating: "/", count: 4_092))\"}", "field 'aflyr' is larger than 8 KiB"),
    ])
    func refusals(aflyr: String, message: String) async throws {
        let response = await Self.iap(Flow.core(), aflyr: aflyr)
        #expect(response.status == 400)
        #expect(response.object["message"] as? String == message)
    }
}
