import Foundation
import JSON
import PluginTestSupport
import ReceiptCore

@testable import ReceiptGate

/// The native API's request decoding on arbitrary bodies: /v1/verify's body read by hand
/// (JSONReader) must agree, refusal for refusal and field for field, with what `JSONBodyReference`
/// works out from JSONSerialization's parse of the raw bytes, wherever JSONSerialization can
/// settle it; a refusal must be a 400-class code with a message, never a trap. The strings of a
/// decoded body then go through JSONWriter, which must write JSONEncoder's bytes.
enum NativeHarness {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static let referenceFields: [(name: String, kind: JSONBodyReference.Kind, required: Bool)] =
        NativeAPI.VerifyBody.CodingKeys.allCases.map {
            ($0.stringValue, $0 == .restore ? .bool : .string, $0 == .store || $0 == .receipt)
        }

    static func run(_ data: Data) {
        let decoded = NativeAPI.VerifyBody.decode(data)
        let expected = JSONBodyReference.outcome(data, fields: referenceFields)
        guard expected == .undecided || expected == outcome(decoded) else {
            fatalError("JSONReader and JSONSerialization disagree: \(outcome(decoded)) vs \(expected)")
        }
        switch decoded {
        case .success(let body):
            if let problem = NativeAPI.validate(body, declaration: nil) { check(problem) }
            checkWriter(strings(body))
        case .failure(let problem):
            check(problem)
        }
    }

    static func check(_ problem: JSONBody.Problem) {
        guard [.missingFields, .invalidField].contains(problem.code), !problem.message.isEmpty,
            NativeAPI.status(for: problem.code) == 400
        else {
            fatalError("a bad body was refused with \(problem.code)")
        }
    }

    static func strings(_ body: NativeAPI.VerifyBody) -> [String?] {
        [
            body.store, body.receipt, body.productID, body.appAccountToken, body.playerID, body.characterID,
            body.serverID,
            body.gameVersion, body.packageName,
        ]
    }

    static func outcome(_ result: Result<NativeAPI.VerifyBody, JSONBody.Problem>) -> JSONBodyReference.Outcome {
        switch result {
        case .success(let body):
            .decoded([body.packageName] + strings(body).dropLast() + [body.restore.map { "\($0)" }])
        case .failure(let problem): .refused(problem.code, problem.message)
        }
    }

    static func checkWriter(_ values: [String?]) {
        var writer = JSONWriter()
        writer.beginArray()
        for value in values { writer.string(value) }
        writer.endArray()
        guard let expected = try? encoder.encode(values), writer.data == expected else {
            fatalError("JSONWriter and JSONEncoder write different bytes for \(values)")
        }
    }
}
