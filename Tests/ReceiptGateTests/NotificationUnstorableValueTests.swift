import Foundation
import HuaweiAppGalleryTestSupport
import ReceiptGate
import TestSupport
import Testing

/// A notification carrying a value the database cannot look up (a NUL character in its app id)
/// is the sender's mistake: a 400 naming it, never a 503 that invites the sender to retry for ever.
@Suite struct NotificationUnstorableValues {
    @Test func aNulInTheAppIDIsAFourHundred() async throws {
        let harness = try await HuaweiAppGalleryHarness.start()
        defer { harness.stop() }
        let answer = try await harness.notify(
            try FakeHuawei.orderNotification(type: 1, token: "tok.nul", applicationID: "1070\u{0}00"))
        #expect(answer.status == 400, "\(answer.text)")
        #expect(try answer.json()["error"] as? String == "INVALID_FIELD", "\(answer.text)")
    }
}
