import Foundation
import ReceiptCore
import Testing
import Xsolla
import XsollaTestSupport

/// Xsolla's signature rule, checked before anything in a webhook is believed: good, tampered,
/// missing, and signed with another secret.
@Suite struct XsollaSignatureRule {
    @Test func theDigestIsSHA1OfTheBodyFollowedByTheSecret() {
        // FIPS 180 test vectors: "abc" and the empty message.
        #expect(
            XsollaSignature.header(body: Data("ab".utf8), secret: "c")
                == "Signature a9993e364706816aba3e25717850c26c9cd0d89d")
        #expect(
            XsollaSignature.header(body: Data(), secret: "") == "Signature da39a3ee5e6b4b0d3255bfef95601890afd80709")
        let long = String(repeating: "a", count: 1_000_000)
        #expect(
            XsollaSignature.header(body: Data(long.utf8), secret: "")
                == "Signature 34aa973cd4c4daa4f61eeb2bdbad27316534016f")
    }

    @Test func aGoodSignatureIsBelieved() async throws {
        let webhook = try FakeXsolla.payment(transactionID: 700_001, player: "player-1")
        let result = await XsollaFixtures.receive(XsollaFixtures.provider(), webhook)
        #expect(result.refusal == nil)
        #expect(result.notifications.count == 1)
        #expect(result.answer == NotificationAnswer(status: 204))
    }

    @Test(arguments: ["tampered", "missing", "wrong secret", "not hex", "upper case scheme"])
    func anythingElseIsForgedAndAnsweredInvalidSignature(_ how: String) async throws {
        let genuine = try FakeXsolla.payment(transactionID: 700_002, player: "player-1")
        let webhook: FakeXsolla.Webhook =
            switch how {
            case "tampered": genuine.tampered()
            case "missing": genuine.with(authorization: nil)
            case "wrong secret":
                try FakeXsolla.payment(transactionID: 700_002, player: "player-1").with(
                    authorization: XsollaSignature.header(body: genuine.body, secret: "another-project-secret"))
            case "not hex": genuine.with(authorization: "Signature zz")
            default: genuine.with(authorization: "Bearer " + (genuine.headers["authorization"] ?? ""))
            }
        let result = await XsollaFixtures.receive(XsollaFixtures.provider(), webhook)
        #expect(result.notifications.isEmpty)
        #expect(result.refusal?.kind == .forged)
        #expect(result.answer?.status == 400)
        #expect(XsollaFixtures.code(result.answer) == "INVALID_SIGNATURE")
    }

    @Test func theSchemeNameIsReadWhateverItsCase() async throws {
        let genuine = try FakeXsolla.payment(transactionID: 700_003, player: "player-1")
        let header = genuine.headers["authorization"] ?? ""
        let webhook = genuine.with(authorization: header.replacingOccurrences(of: "Signature", with: "signature"))
        let result = await XsollaFixtures.receive(XsollaFixtures.provider(), webhook)
        #expect(result.refusal == nil && result.notifications.count == 1)
    }

    @Test func aClientWithoutAWebhookSecretIsAskedAgainLater() async throws {
        var client = XsollaFixtures.client()
        client = ClientWithStoreCredentials(client: client.client, credentials: [:])
        let result = await XsollaFixtures.receive(
            XsollaFixtures.provider(), try FakeXsolla.payment(transactionID: 700_004, player: "p"), client: client)
        #expect(result.refusal?.kind == .retryable)
        #expect(result.answer?.status == 500 && XsollaFixtures.code(result.answer) == "SERVER_ERROR")
    }
}
