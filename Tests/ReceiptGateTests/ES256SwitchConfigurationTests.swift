import Foundation
import OpenSSLCrypto
import ReceiptGate
import Testing

/// `RECEIPTGATE_ES256_FIXED_KEY` picks the App Store verifier's ES256 path at start.
@Suite struct ES256SwitchConfiguration {
    @Test func onByDefaultOffFallsBackToOpenSSL() throws {
        #expect(try ServiceConfiguration.fromEnvironment([:]).es256Verifier is FixedKeyES256Verifier)
        #expect(
            try ServiceConfiguration.fromEnvironment(["RECEIPTGATE_ES256_FIXED_KEY": "on"]).es256Verifier
                is FixedKeyES256Verifier)
        #expect(
            try ServiceConfiguration.fromEnvironment(["RECEIPTGATE_ES256_FIXED_KEY": "off"]).es256Verifier
                is OpenSSLES256Verifier)
    }

    @Test(arguments: ["yes", "OFF", "1"])
    func anyOtherValueStopsStartUpNamingTheVariable(value: String) {
        do {
            _ = try ServiceConfiguration.fromEnvironment(["RECEIPTGATE_ES256_FIXED_KEY": value])
            Issue.record("RECEIPTGATE_ES256_FIXED_KEY=\(value) was accepted")
        } catch let invalid as ServiceConfiguration.Invalid {
            #expect(invalid.variable == "RECEIPTGATE_ES256_FIXED_KEY")
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }
}
