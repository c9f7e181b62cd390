@testable import AppStore
import Crypto
import Foundation
import JSON
import Testing
import AppStoreTestSupport
import TestSupport

/// The StoreKit 2 transaction payload decoded by hand (JSONReader) against JSONDecoder and the
/// synthesized `init(from:)`, over thousands of generated payloads and mutations of real-shaped
/// ones: both refuse, or both give equal values.
@Suite struct DifferentialPayloadTests {
    /// Every stored property, read by reflection: a property added later without hand-written
    /// decoding shows up here as a difference, not as silently missing data.
    static let fieldNames: [String] = Mirror(reflecting: JWSTransactionDecodedPayload()).children.compactMap(\.label)

    static let kinds: [String: JSONSamples.Kind] = [
        "purchaseDate": .integer, "originalPurchaseDate": .integer, "expiresDate": .integer, "signedDate": .integer,
        "revocationDate": .integer, "quantity": .integer, "price": .integer, "revocationReason": .integer, "offerType": .integer,
        "isUpgraded": .bool,
    ]

    static var fields: [(name: String, kind: JSONSamples.Kind)] { fieldNames.map { ($0, kinds[$0] ?? .string) } }

    static func compare(_ bytes: [UInt8], _ label: String) {
        let data = Data(bytes)
        let foundation = try? JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: data)
        let reader: JWSTransactionDecodedPayload?
        do throws(JSONReaderError) {
            reader = try JWSTransactionDecodedPayload(jsonPayload: data)
        } catch where error.code == .unsupportedEncoding {
            return  // UTF-16 or UTF-32: the verifier hands those to JSONDecoder (PayloadDecodingInTheVerifier)
        } catch {
            reader = nil
        }
        #expect(foundation == reader, "\(label): JSONDecoder \(foundation.map { "\($0)" } ?? "refused"), reader \(reader.map { "\($0)" } ?? "refused") for \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        let foundationDates = try? JSONDecoder().decode(AppStoreSignedDataVerifier.SigningDates.self, from: data)
        let readerDates = try? AppStoreSignedDataVerifier.SigningDates(jsonPayload: data)
        #expect(foundationDates?.signedDate == readerDates?.signedDate && foundationDates?.receiptCreationDate == readerDates?.receiptCreationDate
                && (foundationDates == nil) == (readerDates == nil), "\(label) (signing dates)")
    }

    @Test func everyPropertyIsCovered() {
        #expect(Self.fieldNames.count == 28)
        #expect(Set(Self.kinds.keys).isSubset(of: Set(Self.fieldNames)))
    }

    @Test func generatedPayloads() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0101)
            let count = JSONSamples.rounds(3000)
            var accepted = 0
            for index in 0..<count {
                let document = samples.object(fields: Self.fields, unknownKeys: ["BundleId", "bundleID", "signedDate ", "data"])
                if (try? JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: Data(document))) != nil { accepted += 1 }
                Self.compare(document, "payload \(index)")
            }
            #expect(accepted > count / 10 && accepted < count * 19 / 20, "accepted \(accepted) of \(count)")
        }
    }

    /// Apple-shaped payloads (every field right, as JSONSerialization writes them), broken byte by byte.
    @Test func mutatedRealisticPayloads() async throws {
        try await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0102)
            var random = SplitMix64(seed: 0x5EED_0103)
            let full = AppleTestPKI.transaction([
                "webOrderLineItemId": "2000000000000001", "subscriptionGroupIdentifier": "21000000", "expiresDate": Int64(1_800_000_000_000),
                "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138", "revocationReason": 1, "revocationDate": 1_750_000_000_000.5,
                "isUpgraded": false, "offerType": 4, "offerIdentifier": "winback/é😀", "transactionReason": "RENEWAL",
                "offerDiscountType": "PAY_AS_YOU_GO", "appTransactionId": "704000000000000001", "offerPeriod": "P1M",
            ])
            let base = try JSONSerialization.data(withJSONObject: full, options: [.sortedKeys])
            Self.compare(Array(base), "unmutated")
            #expect(try JWSTransactionDecodedPayload(jsonPayload: base).revocationDate == AppStoreDate(milliseconds: 1_750_000_000_000))
            for index in 0..<JSONSamples.rounds(3000) {
                var document = Array(base)
                for _ in 0..<Int.random(in: 1...3, using: &random) { document = samples.mutate(document) }
                Self.compare(document, "mutation \(index)")
            }
        }
    }

    @Test func datesRawValuesAndNulls() {
        for document in [
            #"{"signedDate":1700000000000.9,"purchaseDate":-1.5,"expiresDate":9e15,"revocationDate":8999999999999999.5}"#,
            #"{"signedDate":"1700000000000"}"#, #"{"signedDate":null,"quantity":null,"type":null,"isUpgraded":null}"#,
            #"{"type":"Future Type","offerType":42,"revocationReason":-1,"environment":"Xcode"}"#, #"{"offerType":"1"}"#,
            #"{"quantity":1.0,"price":990e0}"#, #"{"quantity":1.5}"#, #"{"price":9223372036854775808}"#, #"{"isUpgraded":0}"#,
            #"{"bundleId":"com.example.game","bundleId":"com.attacker"}"#, #"{"bundle\u0049d":"escaped key"}"#,
            #"{"bundleId":"a","x":{"\ud800":[01,"\q"]}}"#, #"[]"#, #"null"#, #"{"signedDate":1e400}"#, #"{"signedDate":-9007199254740993.5}"#,
        ] {
            Self.compare(Array(document.utf8), document)
        }
    }
}

/// The verifier around the hand-written decoding: refusals keep JSONDecoder's wording, and
/// payloads JSONDecoder reads as UTF-16 still verify.
@Suite struct PayloadDecodingInTheVerifier {
    private let expectations = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox])

    @Test func aRefusedPayloadKeepsJSONDecodersWording() throws {
        let pki = try AppleTestPKI()
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root])
        let payload = try JSONSerialization.data(withJSONObject: AppleTestPKI.transaction(["quantity": "1"]), options: [.sortedKeys])
        let token = try AppleTestPKI.sign(payloadBytes: payload, header: ["alg": "ES256", "x5c": pki.x5c], key: pki.leafKey)
        var foundationError = ""
        do { _ = try JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: payload) } catch { foundationError = "\(error)" }
        #expect(!foundationError.isEmpty)
        do {
            _ = try verifier.verifyTransaction(token, expecting: expectations)
            Issue.record("accepted a quantity of type string")
        } catch {
            #expect(error.reason == .payloadInvalid)
            #expect(error.message == "payload is not a JWSTransactionDecodedPayload: \(foundationError)")
        }
    }

    @Test func aUTF16PayloadStillDecodesThroughJSONDecoder() throws {
        let pki = try AppleTestPKI()
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root])
        let utf8 = try JSONSerialization.data(withJSONObject: AppleTestPKI.transaction(), options: [.sortedKeys])
        let utf16 = Data(String(decoding: utf8, as: UTF8.self).utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let token = try AppleTestPKI.sign(payloadBytes: utf16, header: ["alg": "ES256", "x5c": pki.x5c], key: pki.leafKey)
        let transaction = try verifier.verifyTransaction(token, expecting: expectations)
        #expect(transaction == (try JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: utf8)))
        #expect(try verifier.verifiedPayload(token) == utf16)
    }
}

@Suite struct EvidenceShape {
    /// The dot count that tells a compact JWS from a receipt equals a plain count, dots at either end included.
    @Test func dotCountAgreesWithAPlainCount() {
        var generator = SeededRandom()
        var samples = ["", ".", "..", "a.b.c", ".a.b.", "no dots", "é.ü.€", String(repeating: "x", count: 5_000) + "."]
        for _ in 0..<1_000 {
            samples.append(String((0..<Int.random(in: 0...300, using: &generator)).map { _ in Int.random(in: 0..<10, using: &generator) == 0 ? "." : "a" }))
        }
        for sample in samples { #expect(AppStoreProvider.dotCount(sample) == sample.filter { $0 == "." }.count, "\(sample) (\(generator.replay))") }
    }
}
