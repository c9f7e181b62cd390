import Foundation
import PluginTestSupport
import ReceiptCore
import TestSupport
import Testing

@testable import ReceiptGate

/// /v1/verify's body read by hand (JSONReader through `JSONBody.decode(from:fields:_:)`) against
/// what `JSONBodyReference` works out from JSONSerialization's parse of the same bytes: the same
/// Problem (code and message) or the same fields. Bodies JSONSerialization cannot settle are
/// checked against literal expectations.
@Suite struct VerifyBodyAgainstJSONSerialization {
    typealias Body = NativeAPI.VerifyBody

    static let fields: [(name: String, kind: JSONSamples.Kind)] =
        Body.CodingKeys.allCases.map { ($0.stringValue, $0 == .restore ? .bool : .string) }
    static let referenceFields: [(name: String, kind: JSONBodyReference.Kind, required: Bool)] =
        Body.CodingKeys.allCases.map {
            ($0.stringValue, $0 == .restore ? .bool : .string, $0 == .store || $0 == .receipt)
        }

    static func outcome(_ result: Result<Body, JSONBody.Problem>) -> JSONBodyReference.Outcome {
        switch result {
        case .failure(let problem): .refused(problem.code, problem.message)
        case .success(let body):
            .decoded([
                body.packageName, body.store, body.receipt, body.productID, body.appAccountToken, body.playerID,
                body.characterID,
                body.serverID, body.gameVersion, body.restore.map { "\($0)" },
            ])
        }
    }

    /// Compares where JSONSerialization decides; says whether it did.
    @discardableResult
    static func compare(_ bytes: [UInt8], _ label: String) -> Bool {
        let expected = JSONBodyReference.outcome(Data(bytes), fields: referenceFields)
        guard expected != .undecided else { return false }
        let actual = outcome(Body.decode(Data(bytes)))
        #expect(actual == expected, "\(label): \(String(decoding: bytes, as: UTF8.self).debugDescription)")
        return true
    }

    @Test func generatedBodies() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0201)
            var outcomes: [String: Int] = [:]
            // Most generated bodies stray outside RFC 8259 somewhere, where JSONSerialization
            // cannot settle them: enough rounds that each outcome is still compared often.
            for index in 0..<JSONSamples.rounds(12000) {
                let body = samples.object(
                    fields: Self.fields, unknownKeys: ["Store", "receipt ", "productID", "restore_"])
                guard Self.compare(body, "body \(index)") else {
                    outcomes["undecided", default: 0] += 1
                    continue
                }
                if case .failure(let problem) = Body.decode(Data(body)) {
                    outcomes[
                        problem.message.hasPrefix("field") ? "field: \(problem.code.rawValue)" : problem.message,
                        default: 0] += 1
                } else {
                    outcomes["decoded", default: 0] += 1
                }
            }
            // Every kind of outcome must be compared often, or the comparison proves little.
            for kind in ["decoded", "missing field 'store'", "field: INVALID_FIELD", "field: MISSING_FIELDS"] {
                #expect(outcomes[kind, default: 0] > 40, "\(kind): \(outcomes)")
            }
        }
    }

    @Test func mutatedBodies() async {
        await offThePool {
            var samples = JSONSamples(seed: 0x5EED_0202)
            let base = Array(
                #"{"store":"app_store","receipt":"eyJhbGciOiJFUzI1NiJ9.e30.c2ln","product_id":"gems.100","app_account_token":"7e3fb20b-4cdb-47cc-936d-99d65f608138","player_id":"p-1","restore":false,"package_name":null}"#
                    .utf8)
            #expect(Self.compare(base, "unmutated"))
            var compared = 0
            for index in 0..<JSONSamples.rounds(4000) {
                var body = base
                for _ in 0..<(index % 3 + 1) { body = samples.mutate(body) }
                if Self.compare(body, "mutation \(index)") { compared += 1 }
            }
            #expect(compared > JSONSamples.rounds(4000) / 4, "compared \(compared)")
        }
    }

    /// Bodies at the edges, with what the reader must make of them (the same as JSONDecoder
    /// makes of them with a Decodable of these fields).
    @Test(arguments: [
        ("", "MISSING_FIELDS: request body is empty; a JSON object is expected"),
        (" ", "INVALID_FIELD: request body is not valid JSON"),
        ("null", "MISSING_FIELDS: field '' must not be null"),
        ("[]", "INVALID_FIELD: request body must be a JSON object"),
        ("\"s\"", "INVALID_FIELD: request body must be a JSON object"),
        ("1", "INVALID_FIELD: request body must be a JSON object"),
        ("{}", "MISSING_FIELDS: missing field 'store'"),
        (#"{"store":null,"receipt":"r"}"#, "MISSING_FIELDS: field 'store' must not be null"),
        (#"{"store":1}"#, "INVALID_FIELD: field 'store' has the wrong type (expected string)"),
        (#"{"store":"s"}"#, "MISSING_FIELDS: missing field 'receipt'"),
        (
            #"{"store":"s","receipt":"r","restore":"yes"}"#,
            "INVALID_FIELD: field 'restore' has the wrong type (expected boolean)"
        ),
        (
            #"{"store":"s","receipt":"r","restore":1,"player_id":2}"#,
            "INVALID_FIELD: field 'player_id' has the wrong type (expected string)"
        ),
        (#"{"receipt":"\q","store":5}"#, "INVALID_FIELD: field 'store' has the wrong type (expected string)"),
        (#"{"store":"\q","receipt":5}"#, "INVALID_FIELD: request body is not valid JSON"),
        (#"{"store":"s","receipt":"r",}"#, #"nil,"s","r",nil,nil,nil,nil,nil,nil,nil"#),
        (#"{"store":"s","store":5,"receipt":"r"}"#, #"nil,"s","r",nil,nil,nil,nil,nil,nil,nil"#),
        (#"{"st\u006fre":"s","receipt":"r"}"#, #"nil,"s","r",nil,nil,nil,nil,nil,nil,nil"#),
        (#"{"\ud800":1,"store":"s","receipt":"r"}"#, "INVALID_FIELD: request body is not valid JSON"),
        (#"{"x":"\q","store":"s","receipt":"r","restore":true}"#, #"nil,"s","r",nil,nil,nil,nil,nil,nil,"true""#),
        ("\u{FEFF}{\"store\":\"s\",\"receipt\":\"r\"}", #"nil,"s","r",nil,nil,nil,nil,nil,nil,nil"#),
    ])
    func handPicked(_ body: String, _ expected: String) {
        #expect(Self.outcome(Body.decode(Data(body.utf8))).description == expected, "\(body)")
        Self.compare(Array(body.utf8), body)
    }

    /// JSONDecoder's synthesized init would read the keys in CodingKeys' order, where
    /// package_name is first: its mistake is named before a missing store. And a top-level null
    /// is JSONBody's odd "field '' must not be null".
    @Test func refusalsNameTheFirstFieldInCodingKeysOrder() {
        let cases: [(String, ErrorCode, String)] = [
            (#"{"package_name":true}"#, .invalidField, "field 'package_name' has the wrong type (expected string)"),
            (#"{"receipt":"r"}"#, .missingFields, "missing field 'store'"),
            (
                #"{"store":"s","receipt":"r","restore":"yes"}"#, .invalidField,
                "field 'restore' has the wrong type (expected boolean)"
            ),
            ("null", .missingFields, "field '' must not be null"),
            ("[]", .invalidField, "request body must be a JSON object"),
            (#"{"store":"s","receipt":"r"} x"#, .invalidField, "request body is not valid JSON"),
        ]
        for (body, code, message) in cases {
            #expect(Self.outcome(Body.decode(Data(body.utf8))) == .refused(code, message), "\(body)")
            Self.compare(Array(body.utf8), body)
        }
    }

    /// JSONDecoder reads UTF-16 and UTF-32 bodies (RFC 4627's detection); so does the reader,
    /// after transcoding them.
    @Test func utf16AndUTF32BodiesAreRead() {
        let text = #"{"store":"app_store","receipt":"r","restore":true}"#
        let expected = JSONBodyReference.Outcome.decoded([nil, "app_store", "r", nil, nil, nil, nil, nil, nil, "true"])
        let utf16BE = Array(text.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] })
        let utf16LE = Array(text.utf16.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] })
        let utf32LE = Array(
            text.unicodeScalars.flatMap { scalar in (0..<4).map { UInt8((scalar.value >> ($0 * 8)) & 0xFF) } })
        for (label, bytes) in [
            ("UTF-16BE", utf16BE), ("UTF-16LE", utf16LE), ("UTF-16LE with BOM", [0xFF, 0xFE] + utf16LE),
            ("UTF-32LE", utf32LE),
        ] {
            #expect(Self.outcome(Body.decode(Data(bytes))) == expected, "\(label)")
        }
        #expect(
            Self.outcome(Body.decode(Data([0x00, 0x7B, 0xD8, 0x00])))
                == .refused(.invalidField, "request body is not valid JSON"))
    }
}

/// The 200 answer written by hand (JSONWriter) against `RouteResponse.json(_:)` (JSONEncoder
/// with sorted keys and unescaped slashes): the same bytes.
@Suite struct VerifyAnswerAgainstJSONEncoder {
    static func hostile(_ random: inout SplitMix64) -> String {
        let pieces = [
            "gems.100", "\"", "\\", "/", "\u{0}", "\u{1f}", "\n", "\u{7f}", "\u{2028}", "é", "😀", "2000000111111111",
            " ",
        ]
        return (0..<Int.random(in: 0...5, using: &random)).map { _ in
            pieces[Int.random(in: 0..<pieces.count, using: &random)]
        }.joined()
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
                var record = TransactionRecord(
                    managementID: Int64(bitPattern: random.next()), store: StoreID(rawValue: Self.hostile(&random)),
                    environment: Bool.random(using: &random) ? .sandbox : .production,
                    transactionID: Self.hostile(&random),
                    state: TransactionState.allCases.randomElement(using: &random) ?? .active,
                    clientID: "client",
                    firstVerifiedAt: Date(timeIntervalSince1970: Double.random(in: 0...2e9, using: &random)))
                record.originalTransactionID = maybe(Self.hostile(&random))
                record.orderID = maybe(Self.hostile(&random))
                record.productID = maybe(Self.hostile(&random))
                record.kind = maybe(
                    [ProductKind.consumable, .nonConsumable, .autoRenewableSubscription].randomElement(using: &random)
                        ?? .consumable)
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
                record.refund = maybe(
                    RefundDetail(
                        storeType: maybe(Self.hostile(&random)), storeSaysPartial: maybe(Bool.random(using: &random)),
                        percentageMilliunits: maybe(Int(truncatingIfNeeded: random.next())),
                        quantity: maybe(Int(truncatingIfNeeded: random.next()))))
                let claimant = Claimant(
                    playerID: maybe(Self.hostile(&random)), characterID: maybe(Self.hostile(&random)),
                    serverID: maybe(Self.hostile(&random)), gameVersion: maybe(Self.hostile(&random)))
                record.claim = maybe(Claim(claimant: claimant, claimedAt: Self.date(&random) ?? Date()))
                let match = [AccountMatch.match, .mismatch, .notComparable].randomElement(using: &random) ?? .match
                let response = NativeAPI.VerifyResponse(
                    status: Bool.random(using: &random) ? "verified" : record.state.rawValue,
                    duplicate: Bool.random(using: &random), firstVerifiedAt: Timestamps.iso8601(record.firstVerifiedAt),
                    transaction: NativeTransaction(record, accountMatch: match), firstClaimedBy: maybe(claimant))
                let expected = RouteResponse.json(response).body
                #expect(
                    response.encoded() == expected,
                    "answer \(index): \(String(decoding: response.encoded(), as: UTF8.self))")
                // The webhook a new purchase owes, written the same way, is what JSONEncoder wrote.
                let webhook = OutboxRepository.envelope(
                    event: "transaction.verified", transaction: response.transaction, client: "rgc_a",
                    aggregateKey: "app_store:1")
                let encoded = try? JSONEncoder.receiptGateStorage.encode(
                    OutboxRepository.Envelope(
                        eventID: webhook.eventID.uuidString.lowercased(), type: "transaction.verified",
                        data: ["transaction": response.transaction]))
                #expect(webhook.message.body == encoded, "webhook \(index)")
            }
        }
    }
}
