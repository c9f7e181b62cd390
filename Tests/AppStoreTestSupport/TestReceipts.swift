package import AppStore
public import Foundation
package import HTTPClient
package import HTTPServer
package import OpenSSLCrypto
package import TestSupport

/// Minimal DER writer for building receipt payloads in tests.
public enum DER {
    package static func tlv(_ tag: UInt8, _ contents: Data) -> Data {
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

    public static func integer(_ value: Int64) -> Data {
        var bytes = withUnsafeBytes(of: value.bigEndian) { Array($0) }
        while bytes.count > 1 && ((bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xff && bytes[1] & 0x80 != 0))
        { bytes.removeFirst() }
        return tlv(0x02, Data(bytes))
    }

    public static func utf8(_ text: String) -> Data { tlv(0x0c, Data(text.utf8)) }
    package static func ia5(_ text: String) -> Data { tlv(0x16, Data(text.utf8)) }

    public static func attribute(_ type: Int64, _ value: Data) -> Data {
        tlv(0x30, integer(type) + integer(1) + tlv(0x04, value))
    }

    public static func set(_ elements: [Data]) -> Data { tlv(0x31, elements.reduce(Data(), +)) }
}

/// Receipts built at test time: a payload of our choosing, signed into PKCS#7 by `openssl cms`
/// (DER, or streamed BER with indefinite lengths and chunked octet strings) by a test PKI's leaf,
/// the container carrying its intermediate and root as Apple's do. Trust `signingPKI().root` as
/// the receipt root (`AppStoreConfiguration.receiptTrustRoots`) to accept them.
package enum TestReceipts {
    private static let shared = Result { try AppleTestPKI() }

    /// The PKI `sign` uses unless told otherwise, one per test process.
    package static func signingPKI() throws -> AppleTestPKI { try shared.get() }

    package static func payload(
        bundle: String = "com.example.game", type: String = "ProductionSandbox",
        purchases: [(id: String, product: String)] = [("2000000000000501", "gems.100")], created: Date = Date()
    ) -> Data {
        var attributes = [
            DER.attribute(0, DER.utf8(type)), DER.attribute(2, DER.utf8(bundle)), DER.attribute(3, DER.utf8("1.0")),
            DER.attribute(12, DER.ia5(ISO8601DateFormatter().string(from: created))),
            DER.attribute(19, DER.utf8("1.0")),
        ]
        for purchase in purchases {
            attributes.append(
                DER.attribute(
                    17,
                    DER.set([
                        DER.attribute(1701, DER.integer(2)), DER.attribute(1702, DER.utf8(purchase.product)),
                        DER.attribute(1703, DER.utf8(purchase.id)), DER.attribute(1705, DER.utf8(purchase.id)),
                        DER.attribute(1704, DER.ia5("2025-10-16T06:51:26Z")), DER.attribute(1708, DER.ia5("")),
                        DER.attribute(1711, DER.integer(220_000_072_586_770)),
                    ])))
        }
        return DER.set(attributes)
    }

    package static func sign(_ payload: Data, streamed: Bool, pki given: AppleTestPKI? = nil) throws -> String {
        let pki = try given ?? signingPKI()
        return try sign(
            payload, streamed: streamed, leaf: pki.leaf, key: pki.leafKey, carrying: [pki.intermediate, pki.root])
    }

    /// Signed by `leaf`, the container carrying `carrying` besides it.
    package static func sign(
        _ payload: Data, streamed: Bool, leaf: Certificate, key signingKey: PrivateKey, carrying: [Certificate]
    ) throws -> String {
        let directory = TestDatabase.temporaryDirectory("receipt")
        let key = directory.appendingPathComponent("key.pem"), cert = directory.appendingPathComponent("cert.pem")
        let chain = directory.appendingPathComponent("chain.pem")
        let input = directory.appendingPathComponent("payload.der"),
            output = directory.appendingPathComponent("receipt.der")
        func pem(_ certificate: Certificate) -> String {
            "-----BEGIN CERTIFICATE-----\n"
                + certificate.derEncoded.base64EncodedString(options: .lineLength64Characters)
                + "\n-----END CERTIFICATE-----\n"
        }
        try signingKey.pemRepresentation().write(to: key, atomically: true, encoding: .utf8)
        try pem(leaf).write(to: cert, atomically: true, encoding: .utf8)
        try carrying.map(pem).joined().write(to: chain, atomically: true, encoding: .utf8)
        try payload.write(to: input)
        // posix_spawn and waitpid: Foundation's Process was seen to hang in waitUntilExit here.
        let signed = try ChildProcess.runBlocking(
            "/usr/bin/openssl",
            [
                "cms", "-sign", "-binary", "-nodetach", "-outform", "DER", "-in", input.path,
                "-signer", cert.path, "-inkey", key.path, "-out", output.path,
            ]
                + (carrying.isEmpty ? [] : ["-certfile", chain.path]) + (streamed ? ["-stream"] : []))
        guard signed.status == 0 else {
            throw CryptoError(.invalidEncoding, "openssl cms failed: \(signed.stderr.prefix(200))")
        }
        return try Data(contentsOf: output).base64EncodedString()
    }
}

/// Apple's legacy verifyReceipt, faked: production says 21007 (a sandbox receipt), sandbox answers.
package final class FakeVerifyReceipt: Sendable {
    package let production: HTTPServer, sandbox: HTTPServer
    package let calls = LockedBox<[String]>([])
    package let sandboxStatus = LockedBox<Int>(0)
    /// The receipt's `in_app` array as the sandbox answers it (JSON).
    package let inApp = LockedBox<String>(
        """
        [{"quantity":"1","product_id":"gems.100","transaction_id":"2000000000000501","original_transaction_id":"2000000000000501",
        "purchase_date_ms":"1760597486000"}]
        """)

    package init() throws {
        let calls = self.calls, sandboxStatus = self.sandboxStatus, inApp = self.inApp
        func responder(_ name: String) -> Responder {
            var router = Router()
            router.post("/verifyReceipt") { request in
                let body = try JSONSerialization.jsonObject(with: request.body) as? [String: Any]
                calls.update { $0.append("\(name):\(body?["password"] as? String ?? "")") }
                guard body?["receipt-data"] is String else { return .json(["status": 21002]) }
                if name == "production" { return .json(["status": 21007]) }
                let status = sandboxStatus.get()
                let json = """
                    {"status":\(status),"environment":"Sandbox","receipt":{"bundle_id":"com.example.game","in_app":\(inApp.get())}}
                    """
                return HTTPResponse(status: 200, headers: ["Content-Type": "application/json"], body: Data(json.utf8))
            }
            return router.build(handlerExecutor: FakeServing.executor)
        }
        production = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: responder("production"))
        sandbox = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), responder: responder("sandbox"))
        try production.start()
        try sandbox.start()
    }

    package var productionURL: String { "http://127.0.0.1:\(production.port)/verifyReceipt" }
    package var sandboxURL: String { "http://127.0.0.1:\(sandbox.port)/verifyReceipt" }

    /// A service's App Store settings confirming StoreKit 1 receipts with this fake (verifyReceipt
    /// and its shared secret), trusting `pki` for signed transactions and `receiptRoot`
    /// (`TestReceipts.signingPKI().root`) for receipts.
    package func appStoreConfiguration(trusting pki: AppleTestPKI, receiptRoot: Certificate) -> AppStoreConfiguration {
        var configuration = AppStoreConfiguration(trustRoots: [pki.root])
        configuration.receiptTrustRoots = [receiptRoot]
        configuration.sharedSecret = "shh"
        configuration.receiptMode = .verifyReceipt
        configuration.verifyReceiptProductionURL = productionURL
        configuration.verifyReceiptSandboxURL = sandboxURL
        return configuration
    }

    package func validator(http: HTTPClient) throws -> AppReceiptValidator {
        AppReceiptValidator(
            mode: .verifyReceipt(sharedSecret: "shh", productionURL: productionURL, sandboxURL: sandboxURL, http: http),
            verifier: AppStoreSignedDataVerifier(trustRoots: []),
            receiptTrustRoots: [try TestReceipts.signingPKI().root])
    }

    package func shutdown() async {
        await production.shutdown()
        await sandbox.shutdown()
    }
}
