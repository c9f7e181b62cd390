import Foundation
import ReceiptCore
@testable import ReceiptGate
import Testing
import TestSupport

/// /v1/verify's body read by hand (JSONReader through `JSONBody.decode(_:from:fields:_:)`)
/// against `JSONBody.decode(VerifyBody.self, from:)`, which is JSONDecoder: the same body, the
/// same Problem (code and message) or the same fields.
@Suite struct VerifyBodyAgainstJSONBody {
    typealias Body = NativeAPI.VerifyBody

    static let fields: [(name: String, kind: JSONSamples.Kind)] =
        Body.CodingKeys.allCases.map { ($0.stringValue, $0 == .restore ? .bool : .string) }

    static func describe(_ result: Result<Body, JSONBody.Problem>) -> String {
        switch result {
        case .failure(let problem): "\(problem.code.rawValue): \(problem.message)"
        case .success(let body):
            [body.store, body.receipt, body.productID, body.appAccountToken, body.playerID, body.characterID, body.serverID,
             body.gameVersion, body.restore.map { "\($0)" }, body.packageName].map { $0.map { "\($0.debugDescription)" } ?? "nil" }
                .joined(separator: ",")
        }
    }

    static func compare(_ bytes: [UInt8], _ label: String) {
        let expected = describe(JSONBody.decode(Body.self, from: Data(bytes)))
        let actual = describe(Body.decode(Data(bytes)))
        #expect(actual == expected, "\(label): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
    }

    @Test func generatedBodies() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0201)
            var outcomes: [String: Int] = [:]
            for index in 0..<JSONSamples.rounds(4000) {
                let body = samples.object(fields: Self.fields, unknownKeys: ["Store", "receipt ", "productID", "restore_"])
                let outcome = JSONBody.decode(Body.self, from: Data(body))
                if case .failure(let problem) = outcome {
                    outcomes[problem.message.hasPrefix("field") ? "field: \(problem.code.rawValue)" : problem.message, default: 0] += 1
                } else {
                    outcomes["decoded", default: 0] += 1
                }
                Self.compare(body, "body \(index)")
            }
            // Every kind of outcome must occur often, or the comparison proves little.
            for kind in ["decoded", "missing field 'store'", "request body is not valid JSON", "field: INVALID_FIELD", "field: MISSING_FIELDS"] {
                #expect(outcomes[kind, default: 0] > 40, "\(kind): \(outcomes)")
            }
        }
    }

    @Test func mutatedBodies() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0202)
            let base = Array(#"{"store":"app_store","receipt":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln","product_id":"gems.100","app_account_token":"7e3fb20b-4cdb-47cc-936d-99d65f608138","player_id":"p-1","restore":false,"package_name":null}"#.utf8)
            Self.compare(base, "unmutated")
            for index in 0..<JSONSamples.rounds(4000) {
                var body = base
                for _ in 0..<(index % 3 + 1) { body = samples.mutate(body) }
                Self.compare(body, "mutation \(index)")
            }
        }
    }

    @Test(arguments: [
        "", " ", "null", "[]", "\"s\"", "1", "{}", #"{"store":null,"receipt":"r"}"#, #"{"store":1}"#, #"{"store":"s"}"#,
        #"{"store":"s","receipt":"r","restore":"yes"}"#, #"{"store":"s","receipt":"r","restore":1,"player_id":2}"#,
        #"{"receipt":"\q","store":5}"#, #"{"store":"\q","receipt":5}"#, #"{"store":"s","receipt":"r",}"#,
        #"{"store":"s","store":5,"receipt":"r"}"#, #"{"st\u006fre":"s","receipt":"r"}"#, #"{"\ud800":1,"store":"s","receipt":"r"}"#,
        "\u{FEFF}{\"store\":\"s\",\"receipt\":\"r\"}",
    ])
    func handPicked(_ body: String) {
        Self.compare(Array(body.utf8), body)
    }

    /// JSONDecoder's synthesized init reads keys in CodingKeys' order, where package_name is
    /// first: its mistake is named before a missing store. And a top-level null is JSONBody's odd
    /// "field '' must not be null".
    @Test func refusalsNameWhatJSONDecoderNames() {
        let cases: [(String, ErrorCode, String)] = [
            (#"{"package_name":true}"#, .invalidField, "field 'package_name' has the wrong type (expected string)"),
            (#"{"receipt":"r"}"#, .missingFields, "missing field 'store'"),
            (#"{"store":"s","receipt":"r","restore":"yes"}"#, .invalidField, "field 'restore' has the wrong type (expected boolean)"),
            ("null", .missingFields, "field '' must not be null"), ("[]", .invalidField, "request body must be a JSON object"),
            (#"{"store":"s","receipt":"r"} x"#, .invalidField, "request body is not valid JSON"),
        ]
        for (body, code, message) in cases {
            #expect(Self.describe(Body.decode(Data(body.utf8))) == "\(code.rawValue): \(message)", "\(body)")
            Self.compare(Array(body.utf8), body)
        }
    }

    @Test func utf16BodiesGoToJSONDecoder() {
        let text = #"{"store":"app_store","receipt":"r"}"#
        let utf16 = Array(text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
        Self.compare(utf16, "UTF-16BE")
        #expect(Self.describe(Body.decode(Data(utf16))).hasPrefix("\"app_store\""))
    }
}

/// The 200 answer written by hand (JSONWriter) against `RouteResponse.json(_:)` (JSONEncoder
/// with sorted keys and unescaped slashes): the same bytes.
@Suite struct VerifyAnswerAgainstJSONEncoder {
    static func hostile(_ random: inout SplitMix64) -> String {
        let pieces = ["gems.100", "\"", "\\", "/", "\u{0}", "\u{1f}", "\n", "\u{7f}", "\u{2028}", "é", "😀", "2000000111111111", " "]
        return (0..<Int.random(in: 0...5, using: &random)).map { _ in pieces[Int.random(in: 0..<pieces.count, using: &random)] }.joined()
    }

    static func date(_ random: inout SplitMix64) -> Date? {
        guard Bool.random(using: &random) else { return nil }
        return Date(timeIntervalSince1970: Double.random(in: -1e10...1e11, using: &random))
    }

    @Test func bytesEqualJSONEncoders() async {
        await offThePool {
            var random = SplitMix64(seed: 0x5EED_0203)
            func maybe<T>(_ value: T) -> T? { Bool.random(using: &random) ? value : nil }
            for index in 0..<JSONSamples.rounds(2000) {
                var record = TransactionRecord(managementID: Int64(bitPattern: random.next()), store: StoreID(rawValue: Self.hostile(&random)),
                                               environment: Bool.random(using: &random) ? .sandbox : .production,
                                               transactionID: Self.hostile(&random), state: TransactionState.allCases.randomElement(using: &random) ?? .active,
                                               clientID: "client", firstVerifiedAt: Date(timeIntervalSince1970: Double.random(in: 0...2e9, using: &random)))
                record.originalTransactionID = maybe(Self.hostile(&random))
                record.orderID = maybe(Self.hostile(&random))
                record.productID = maybe(Self.hostile(&random))
                record.kind = maybe([ProductKind.consumable, .nonConsumable, .autoRenewableSubscription].randomElement(using: &random) ?? .consumable)
                record.quantity = maybe(Int(truncatingIfNeeded: random.next()))
                record.priceMilliunits = maybe(Int64(bitPattern: random.next()))
                record.currency = maybe(Self.hostile(&random))
                record.storefront = maybe(Self.hostile(&random))
                record.purchaseDate = Self.date(&random)
                record.expiresDate = Self.date(&random)
                record.revocationDate = Self.date(&random)
                record.revocationReason = maybe(Self.hostile(&random))
                record.ownership = maybe(Bool.random(using: &random) ? Ownership.purchased : .familyShared)
                record.accountToken = maybe(Self.hostile(&random))
                let match = [AccountMatch.match, .mismatch, .notComparable].randomElement(using: &random) ?? .match
                let response = NativeAPI.VerifyResponse(status: Bool.random(using: &random) ? "verified" : record.state.rawValue,
                                                        duplicate: Bool.random(using: &random), firstVerifiedAt: Timestamps.iso8601(record.firstVerifiedAt),
                                                        transaction: NativeTransaction(record, accountMatch: match))
                let expected = RouteResponse.json(response).body
                #expect(response.encoded() == expected, "answer \(index): \(String(decoding: response.encoded(), as: UTF8.self))")
            }
        }
    }
}
