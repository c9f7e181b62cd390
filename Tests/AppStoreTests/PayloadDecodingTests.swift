import AppStoreTestSupport
import Foundation
import OpenSSLCrypto
import TestSupport
import Testing

@testable import AppStore

/// The StoreKit 2 transaction payload decoded by hand (JSONReader) against what
/// `StoreKitPayloadReference` works out from JSONSerialization's parse of the same bytes, over
/// thousands of generated payloads and mutations of real-shaped ones: both refuse, or both give
/// equal values, wherever JSONSerialization settles it.
@Suite struct DifferentialPayloadTests {
    /// Every stored property, read by reflection: a property added later without hand-written
    /// decoding shows up here as a difference, not as silently missing data.
    static let fieldNames: [String] = Mirror(reflecting: JWSTransactionDecodedPayload()).children.compactMap(\.label)

    static let kinds: [String: JSONSamples.Kind] = [
        "purchaseDate": .integer, "originalPurchaseDate": .integer, "expiresDate": .integer, "signedDate": .integer,
        "revocationDate": .integer, "quantity": .integer, "price": .integer, "revocationReason": .integer,
        "offerType": .integer, "revocationPercentage": .integer,
        "isUpgraded": .bool, "advancedCommerceInfo": .any, "commitmentInfo": .any,
    ]

    static var fields: [(name: String, kind: JSONSamples.Kind)] { fieldNames.map { ($0, kinds[$0] ?? .string) } }

    /// Compares where JSONSerialization decides; says whether it did.
    @discardableResult
    static func compare(_ bytes: [UInt8], _ label: String) -> Bool {
        let data = Data(bytes)
        let reader = try? JWSTransactionDecodedPayload(jsonPayload: data)
        let expected = StoreKitPayloadReference.transaction(data)
        if case .decided(let reference) = expected {
            #expect(
                reference == reader,
                "\(label): JSONSerialization \(reference.map { "\($0)" } ?? "refused"), reader \(reader.map { "\($0)" } ?? "refused") for \(String(decoding: bytes, as: UTF8.self).debugDescription)"
            )
        }
        if case .decided(let reference) = StoreKitPayloadReference.signingDates(data) {
            let readerDates = (try? AppStoreSignedDataVerifier.SigningDates(jsonPayload: data)).map {
                [$0.signedDate, $0.receiptCreationDate]
            }
            #expect(reference == readerDates, "\(label) (signing dates)")
        }
        return expected != .undecided
    }

    @Test func everyPropertyIsCovered() {
        #expect(Self.fieldNames.count == 33)
        #expect(Set(Self.kinds.keys).isSubset(of: Set(Self.fieldNames)))
    }

    @Test func generatedPayloads() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0101)
            let count = JSONSamples.rounds(3000)
            var accepted = 0, compared = 0
            for index in 0..<count {
                let document = samples.object(
                    fields: Self.fields, unknownKeys: ["BundleId", "bundleID", "signedDate ", "data"])
                guard Self.compare(document, "payload \(index)") else { continue }
                compared += 1
                if (try? JWSTransactionDecodedPayload(jsonPayload: Data(document))) != nil { accepted += 1 }
            }
            // Both outcomes must be compared often, or the comparison proves little.
            #expect(
                accepted > 40 && compared - accepted > 40,
                "accepted \(accepted) of \(compared) compared (\(count) generated)")
        }
    }

    /// Apple-shaped payloads (every field right, as JSONSerialization writes them), broken byte by byte.
    @Test func mutatedRealisticPayloads() async throws {
        try await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0102)
            var random = SplitMix64(seed: 0x5EED_0103)
            let full = AppleTestPKI.transaction([
                "webOrderLineItemId": "2000000000000001", "subscriptionGroupIdentifier": "21000000",
                "expiresDate": Int64(1_800_000_000_000),
                "appAccountToken": "7e3fb20b-4cdb-47cc-936d-99d65f608138", "revocationReason": 1,
                "revocationDate": 1_750_000_000_000.5,
                "isUpgraded": false, "offerType": 4, "offerIdentifier": "winback/é😀", "transactionReason": "RENEWAL",
                "offerDiscountType": "PAY_AS_YOU_GO", "appTransactionId": "704000000000000001", "offerPeriod": "P1M",
                "billingPlanType": "MONTHLY",
                "commitmentInfo": [
                    "billingPeriodNumber": 2, "totalBillingPeriods": 12, "commitmentExpiresDate": 1_820_000_000_000,
                    "commitmentPrice": 119_880,
                ] as [String: any Sendable],
            ])
            let base = try JSONSerialization.data(withJSONObject: full, options: [.sortedKeys])
            #expect(Self.compare(Array(base), "unmutated"))
            #expect(
                try JWSTransactionDecodedPayload(jsonPayload: base).revocationDate
                    == AppStoreDate(milliseconds: 1_750_000_000_000))
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
            #"{"type":"Future Type","offerType":42,"revocationReason":-1,"environment":"Xcode"}"#,
            #"{"offerType":"1"}"#,
            #"{"quantity":1.0,"price":990e0}"#, #"{"quantity":1.5}"#, #"{"price":9223372036854775808}"#,
            #"{"isUpgraded":0}"#,
            #"{"bundleId":"com.example.game","bundleId":"com.attacker"}"#, #"{"bundle\u0049d":"escaped key"}"#,
            #"[]"#, #"null"#,
        ] {
            // Each of these is one JSONSerialization settles; those it cannot are the next test's.
            #expect(Self.compare(Array(document.utf8), document), "JSONSerialization does not settle \(document)")
        }
    }

    /// Where JSONSerialization cannot settle it, what JSONDecoder gives, written out: the
    /// reader's bundle id, or "refused".
    @Test func outsideWhatJSONSerializationSettles() {
        for (document, expected) in [
            (#"{"bundleId":"a","x":{"\ud800":[01,"\q"]}}"#, "a"), (#"{"bundleId":"a","signedDate":1e400}"#, "refused"),
            (#"{"bundleId":"a","signedDate":-9007199254740993.5}"#, "a"),
            (#"{"bundleId":"a","price":9007199254740993.0}"#, "a"),
            ("\u{FEFF}{\"bundleId\":\"a\",}", "a"), (#"{"bundleId":"\ufeffa"}"#, "\u{FEFF}a"),
        ] {
            let reader = try? JWSTransactionDecodedPayload(jsonPayload: Data(document.utf8))
            #expect((reader.map { $0.bundleId ?? "-" } ?? "refused") == expected, "\(document)")
        }
    }
}

/// The verifier around the hand-written decoding: a refusal names the field, and payloads
/// JSONDecoder would read as UTF-16 still verify.
@Suite struct PayloadDecodingInTheVerifier {
    private let expectations = AppStoreExpectations(bundleIDs: ["com.example.game"], environments: [.sandbox])

    @Test func aRefusedPayloadNamesTheField() throws {
        let pki = try AppleTestPKI()
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root])
        let payload = try JSONSerialization.data(
            withJSONObject: AppleTestPKI.transaction(["quantity": "1"]), options: [.sortedKeys])
        let token = try AppleTestPKI.sign(
            payloadBytes: payload, header: ["alg": "ES256", "x5c": pki.x5c], key: pki.leafKey)
        do {
            _ = try verifier.verifyTransaction(token, expecting: expectations)
            Issue.record("accepted a quantity of type string")
        } catch {
            #expect(error.reason == .payloadInvalid)
            #expect(
                error.message
                    == "payload is not a JWSTransactionDecodedPayload: JSON_TYPE_MISMATCH: quantity: expected a number, found a string"
            )
        }
    }

    @Test func aUTF16PayloadIsTranscoded() throws {
        let pki = try AppleTestPKI()
        let verifier = AppStoreSignedDataVerifier(trustRoots: [pki.root])
        let utf8 = try JSONSerialization.data(withJSONObject: AppleTestPKI.transaction(), options: [.sortedKeys])
        let utf16 = Data(String(decoding: utf8, as: UTF8.self).utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let token = try AppleTestPKI.sign(
            payloadBytes: utf16, header: ["alg": "ES256", "x5c": pki.x5c], key: pki.leafKey)
        let transaction = try verifier.verifyTransaction(token, expecting: expectations)
        #expect(transaction == (try JWSTransactionDecodedPayload(jsonPayload: utf8)))
        #expect(transaction.bundleId == "com.example.game")
        #expect(try verifier.verifiedPayload(token) == utf16)
    }
}

@Suite struct EvidenceShape {
    /// The dot count that tells a compact JWS from a receipt equals a plain count, dots at either end included.
    @Test func dotCountAgreesWithAPlainCount() {
        var generator = SeededRandom()
        var samples = ["", ".", "..", "a.b.c", ".a.b.", "no dots", "é.ü.€", String(repeating: "x", count: 5_000) + "."]
        for _ in 0..<1_000 {
            samples.append(
                String(
                    (0..<Int.random(in: 0...300, using: &generator)).map { _ in
                        Int.random(in: 0..<10, using: &generator) == 0 ? "." : "a"
                    }))
        }
        for sample in samples {
            #expect(
                AppStoreProvider.dotCount(sample) == sample.filter { $0 == "." }.count,
                "\(sample) (\(generator.replay))")
        }
    }
}
