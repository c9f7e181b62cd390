import Foundation
import JSON
import ReceiptCore
@testable import ReceiptGate

/// The native API's request decoding on arbitrary bodies: /v1/verify's body read by hand
/// (JSONReader) and by `JSONBody.decode` (JSONDecoder) must agree, refusal for refusal and field
/// for field; a refusal must be a 400-class code with a message, never a trap. The strings of a
/// decoded body then go through JSONWriter, which must write JSONEncoder's bytes.
enum NativeHarness {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    static func run(_ data: Data) {
        let reference = JSONBody.decode(NativeAPI.VerifyBody.self, from: data)
        let decoded = NativeAPI.VerifyBody.decode(data)
        guard describe(reference) == describe(decoded) else {
            fatalError("JSONReader and JSONDecoder disagree: \(describe(decoded)) vs \(describe(reference))")
        }
        switch decoded {
        case .success(let body):
            if let problem = NativeAPI.validate(body) { check(problem) }
            checkWriter(strings(body))
        case .failure(let problem):
            check(problem)
        }
    }

    static func check(_ problem: JSONBody.Problem) {
        guard [.missingFields, .invalidField].contains(problem.code), !problem.message.isEmpty,
              NativeAPI.status(for: problem.code) == 400 else {
            fatalError("a bad body was refused with \(problem.code)")
        }
    }

    static func strings(_ body: NativeAPI.VerifyBody) -> [String?] {
        [body.store, body.receipt, body.productID, body.appAccountToken, body.playerID, body.characterID, body.serverID,
         body.gameVersion, body.packageName]
    }

    static func describe(_ result: Result<NativeAPI.VerifyBody, JSONBody.Problem>) -> String {
        switch result {
        case .success(let body): "\(strings(body)) \(String(describing: body.restore))"
        case .failure(let problem): "\(problem.code.rawValue): \(problem.message)"
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
