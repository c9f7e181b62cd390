@testable import AppStore
import Crypto
import Foundation
import HTTPClient
import HTTPServer
import Testing
import TestSupport

/// Minimal DER writer for building receipt payloads in tests.
enum DER {
    static func tlv(_ tag: UInt8, _ contents: Data) -> Data {
        var out = Data([tag])
        if contents.count < 128 {
            out.append(UInt8(contents.count))
        } else {
            var length = contents.count, bytes: [UInt8] = []
            while length > 0 { bytes.insert(UInt8(length & 0xff), at: 0); length >>= 8 }
            out.append(0x80 | UInt8(bytes.count))
            out.append(contentsOf: bytes)
        }
        return out + contents
    }

    static func integer(_ value: Int64) -> Data {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        while bytes.count > 1 && ((bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xff && bytes[1] & 0x80 != 0)) { bytes.removeFirst() }
        return tlv(0x02, Data(bytes))
    }

    static func utf8(_ text: String) -> Data { tlv(0x0c, Data(text.utf8)) }
    static func ia5(_ text: String) -> Data { tlv(0x16, Data(text.utf8)) }

    static func attribute(_ type: Int64, _ value: Data) -> Data {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }

    static func set(_ elements: [Data]) -> Data { tlv(0x31, elements.reduce(Data(), +)) }
}

/// Receipts built at test time: a payload of our choosing, signed into PKCS#7 by `openssl cms`
/// (DER, or streamed BER with indefinite lengths and chunked octet strings).
enum TestReceipts {
    static func payload(bundle: String = "com.example.game", type: String = "ProductionSandbox",
                        purchases: [(id: String, product: String)] = [("2000000000000501", "gems.100")]) -> Data {
        var attributes = [DER.attribute(0, DER.utf8(type)), DER.attribute(2, DER.utf8(bundle)), DER.attribute(3, DER.utf8("1.0")),
                          DER.attribute(12, DER.ia5("2025-10-16T06:51:26Z")), DER.attribute(19, DER.utf8("1.0"))]
        for purchase in purchases {
            attributes.append(DER.attribute(17, DER.set([
                DER.attribute(1701, DER.integer(2)), DER.attribute(1702, DER.utf8(purchase.product)),
                DER.attribute(1703, DER.utf8(purchase.id)), DER.attribute(1705, DER.utf8(purchase.id)),
                DER.attribute(1704, DER.ia5("2025-10-16T06:51:26Z")), DER.attribute(1708, DER.ia5("")),
                DER.attribute(1711, DER.integer(220_000_072_586_770)),
            ])))
        }
        return DER.set(attributes)
    }

    static func sign(_ payload: Data, streamed: Bool) throws -> String {
        let directory = TestDatabase.temporaryDirectory("receipt")
        let pki = try AppleTestPKI()
        let key = directory.appendingPathComponent("key.pem"), cert = directory.appendingPathComponent("cert.pem")
        let input = directory.appendingPathComponent("payload.der"), output = directory.appendingPathComponent("receipt.der")
        try pki.leafKey.pemRepresentation().write(to: key, atomically: true, encoding: .utf8)
        try ("-----BEGIN CERTIFICATE-----\n" + pki.leaf.derEncoded.base64EncodedString(options: .lineLength64Characters) + "\n-----END CERTIFICATE-----\n")
            .write(to: cert, atomically: true, encoding: .utf8)
        try payload.write(to: input)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["cms", "-sign", "-binary", "-nodetach", "-outform", "DER", "-in", input.path, "-signer", cert.path,
                             "-inkey", key.path, "-out", output.path] + (streamed ? ["-stream"] : [])
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw CryptoError(.invalidEncoding, "openssl cms failed") }
        return try Data(contentsOf: output).base64EncodedString()
    }
}

@Suite struct AppReceiptParsing {
    /// A real StoreKit 1 sandbox receipt Apple signed on 2025-10-16 (its chain is Apple's: receipt
    /// signing → WWDR G5 → Apple Root CA), published in a public iOS project's source.
    @Test func parsesARealAppleReceipt() throws {
        let url = try #require(Bundle.module.url(forResource: "Fixtures/real-sandbox-receipt", withExtension: "b64"))
        let receipt = try AppReceipt(base64: try String(contentsOf: url, encoding: .utf8))
        #expect(receipt.bundleID == "com.starlink.crushlive")
        #expect(receipt.receiptType == "ProductionSandbox")
        #expect(receipt.environment == .sandbox)
        #expect(receipt.applicationVersion == "1")
        #expect(receipt.originalApplicationVersion == "1.0")
        #expect(receipt.creationDate == Date(timeIntervalSince1970: 1_760_597_486))
        #expect(receipt.inApp.count == 1)
        let purchase = try #require(receipt.inApp.first)
        #expect(purchase.productID == "com.starlink.crushlive.coins_6000")
        #expect(purchase.transactionID == "2000001035354428")
        #expect(purchase.originalTransactionID == "2000001035354428")
        #expect(purchase.quantity == 1)
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_760_597_486))
        #expect(purchase.expiresDate == nil)
    }

    @Test(arguments: [false, true])
    func parsesDERAndStreamedBER(streamed: Bool) throws {
        let receipt = try AppReceipt(base64: try TestReceipts.sign(TestReceipts.payload(purchases: [("2000000000000501", "gems.100"), ("2000000000000502", "gems.500")]),
                                                                   streamed: streamed))
        #expect(receipt.bundleID == "com.example.game")
        #expect(receipt.inApp.map(\.transactionID) == ["2000000000000501", "2000000000000502"])
        #expect(receipt.inApp.first?.quantity == 2)
        #expect(receipt.inApp.first?.webOrderLineItemID == 220_000_072_586_770)
    }

    @Test(arguments: ["", "!!!!", "aGVsbG8gd29ybGQ=", Data((0..<600).map { UInt8($0 % 256) }).base64EncodedString(),
                      String(repeating: "A", count: 2_000_004)])
    func garbageIsACleanRejection(_ text: String) {
        expectRejection(.receiptMalformed) { _ = try AppReceipt(base64: text) }
    }

    @Test func truncatedOrWrongPayloadsAreRejected() throws {
        let good = try #require(Data(base64Encoded: try TestReceipts.sign(TestReceipts.payload(), streamed: false)))
        expectRejection(.receiptMalformed) { _ = try AppReceipt(base64: good.prefix(good.count / 2).base64EncodedString()) }
        let notASet = try TestReceipts.sign(DER.utf8("not a receipt"), streamed: false)
        expectRejection(.receiptMalformed) { _ = try AppReceipt(base64: notASet) }
        let noBundle = try TestReceipts.sign(DER.set([DER.attribute(0, DER.utf8("Production"))]), streamed: false)
        expectRejection(.receiptMalformed) { _ = try AppReceipt(base64: noBundle) }
    }
}

@Suite struct AppReceiptValidation {
    static let expectations = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox, .production])

    @Test func confirmedThroughTheAppStoreServerAPI() async throws {
        let fake = try FakeAppStoreServerAPI()
        try fake.add("2000000000000501", environment: "Sandbox", ["productId": "gems.100"])
        let validator = AppReceiptValidator(mode: .serverAPI(fake.client()), verifier: AppStoreSignedDataVerifier(trustRoots: [fake.pki.root]))
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        let confirmed = try await validator.validate(receipt, expecting: Self.expectations)
        #expect(confirmed.count == 1)
        #expect(confirmed.first?.transactionID == "2000000000000501")
        #expect(confirmed.first?.environment == .sandbox)
        #expect(confirmed.first?.signedTransaction?.price == 990)
        // The receipt said sandbox, so sandbox was asked first.
        #expect(fake.hits("Production /inApps/v1/transactions/{id}") == 0)

        // A fabricated receipt naming a transaction Apple never made.
        let invented = try TestReceipts.sign(TestReceipts.payload(purchases: [("2000000000009999", "gems.100")]), streamed: false)
        await expectAsyncRejection(.receiptNotConfirmed) { _ = try await validator.validate(invented, expecting: Self.expectations) }
        let otherApp = try TestReceipts.sign(TestReceipts.payload(bundle: "com.other"), streamed: false)
        await expectAsyncRejection(.bundleMismatch) { _ = try await validator.validate(otherApp, expecting: Self.expectations) }
        fake.state.failuresFirst.set(["/inApps/v1/transactions/{id}": [503, 503, 503]])
        await expectAsyncRejection(.storeUnavailable) { _ = try await validator.validate(receipt, expecting: Self.expectations) }
        await fake.shutdown()
    }

    @Test func confirmedThroughVerifyReceiptWithTheSandboxRedirect() async throws {
        let fake = try FakeVerifyReceipt()
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: false)
        let validator = fake.validator()
        let confirmed = try await validator.validate(receipt, expecting: Self.expectations)
        #expect(confirmed.map(\.transactionID) == ["2000000000000501"])
        #expect(confirmed.first?.environment == .sandbox)
        #expect(confirmed.first?.quantity == 1)
        #expect(confirmed.first?.signedTransaction == nil)
        #expect(fake.calls.get() == ["production:shh", "sandbox:shh"])

        let productionOnly = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.production])
        await expectAsyncRejection(.environmentMismatch) { _ = try await validator.validate(receipt, expecting: productionOnly) }
        for (status, reason) in [(21002, AppStoreVerificationError.Reason.receiptNotConfirmed), (21003, .receiptNotConfirmed),
                                 (21004, .misconfigured), (21005, .storeUnavailable), (21199, .storeUnavailable), (21010, .receiptNotConfirmed)] {
            fake.sandboxStatus.set(status)
            await expectAsyncRejection(reason) { _ = try await validator.validate(receipt, expecting: Self.expectations) }
        }
        await fake.shutdown()
    }

    @Test func statusTableMatchesApplesDocumentation() {
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 0) == nil)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21006) == nil)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21004)?.reason == .misconfigured)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21009)?.isRetryable == true)
        #expect(AppReceiptValidator.verifyReceiptFailure(status: 21000)?.errorCode == .verificationFailed)
    }
}

/// Apple's legacy verifyReceipt, faked: production says 21007 (a sandbox receipt), sandbox answers.
final class FakeVerifyReceipt: Sendable {
    let production: HTTPServer, sandbox: HTTPServer
    let calls = LockedBox<[String]>([])
    let sandboxStatus = LockedBox<Int>(0)

    init() throws {
        let calls = self.calls, sandboxStatus = self.sandboxStatus
        func responder(_ name: String) -> Responder {
            var router = Router()
            router.post("/verifyReceipt") { request in
                let body = try JSONSerialization.jsonObject(with: request.body) as? [String: Any]
                calls.update { $0.append("\(name):\(body?["password"] as? String ?? "")") }
                guard body?["receipt-data"] is String else { return .json(["status": 21002]) }
                if name == "production" { return .json(["status": 21007]) }
                let status = sandboxStatus.get()
                let json = """
                    {"status":\(status),"environment":"Sandbox","receipt":{"bundle_id":"com.example.game","in_app":[{"quantity":"1",
                    "product_id":"gems.100","transaction_id":"2000000000000501","original_transaction_id":"2000000000000501",
                    "purchase_date_ms":"1760597486000"}]}}
                    """
                return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(json.utf8))
            }
            return router.build()
        }
        production = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: responder("production"))
        sandbox = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: responder("sandbox"))
        try production.start()
        try sandbox.start()
    }

    func validator() -> AppReceiptValidator {
        AppReceiptValidator(mode: .verifyReceipt(sharedSecret: "shh", productionURL: "http://127.0.0.1:\(production.port)/verifyReceipt",
                                                 sandboxURL: "http://127.0.0.1:\(sandbox.port)/verifyReceipt", http: HTTPClientForTests.fast()),
                            verifier: AppStoreSignedDataVerifier(trustRoots: []))
    }

    func shutdown() async {
        await production.shutdown()
        await sandbox.shutdown()
    }
}

func expectAsyncRejection(_ reason: AppStoreVerificationError.Reason, _ body: () async throws -> Void,
                          sourceLocation: SourceLocation = #_sourceLocation) async {
    do {
        try await body()
        Issue.record("accepted; expected \(reason)", sourceLocation: sourceLocation)
    } catch let error as AppStoreVerificationError {
        #expect(error.reason == reason, "rejected as \(error.reason) (\(error.message)); expected \(reason)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("failed with \(error); expected \(reason)", sourceLocation: sourceLocation)
    }
}

@Suite struct StoreKit1ThroughTheProvider {
    /// The provider picks StoreKit 1 for base64 receipts and normalizes only what SK1 says.
    @Test func sk1EvidenceIsNormalizedWithTheRestNull() async throws {
        let fake = try FakeVerifyReceipt()
        var configuration = try AppStoreConfiguration.fromEnvironment([
            "RECEIPTGATE_APPSTORE_SHARED_SECRET": "shh",
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_PRODUCTION_URL": "http://127.0.0.1:\(fake.production.port)/verifyReceipt",
            "RECEIPTGATE_APPSTORE_VERIFY_RECEIPT_SANDBOX_URL": "http://127.0.0.1:\(fake.sandbox.port)/verifyReceipt",
        ])
        configuration.trustRoots = []
        let provider = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: []), configuration: configuration, http: HTTPClientForTests.fast())
        let receipt = try TestReceipts.sign(TestReceipts.payload(), streamed: true)
        let purchases = try await provider.verify(evidence: receipt, context: .init(appIdentifiers: ["com.example.game"], environments: [.sandbox]))
        let purchase = try #require(purchases.first)
        #expect(purchase.transactionID == "2000000000000501")
        #expect(purchase.environment == .sandbox)
        #expect(purchase.quantity == 1)
        #expect(purchase.productID == "gems.100")
        #expect(purchase.purchaseDate == Date(timeIntervalSince1970: 1_760_597_486))
        #expect(purchase.kind == nil && purchase.priceMilliunits == nil && purchase.currency == nil && purchase.storefront == nil && purchase.ownership == nil)

        // Without a shared secret or API key, SK1 cannot be confirmed: a server-side problem, not the player's.
        let unconfigured = AppStoreProvider(verifier: AppStoreSignedDataVerifier(trustRoots: []))
        do {
            _ = try await unconfigured.verify(evidence: receipt, context: .init(appIdentifiers: ["com.example.game"], environments: [.sandbox]))
            Issue.record("an SK1 receipt was accepted with no way to confirm it")
        } catch let error as StoreVerificationError {
            #expect(error.code == .verifierError)
        }
        await fake.shutdown()
    }
}

import ReceiptCore
