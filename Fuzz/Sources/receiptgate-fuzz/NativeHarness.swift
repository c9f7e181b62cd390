import Foundation
import ReceiptCore
@testable import ReceiptGate

/// The native API's request decoding on arbitrary bodies: `JSONBody.decode` of /v1/verify's body
/// and its validation. A refusal must be a 400-class code with a message, never a trap.
enum NativeHarness {
    static func run(_ data: Data) {
        switch JSONBody.decode(NativeAPI.VerifyBody.self, from: data) {
        case .success(let body):
            if let problem = NativeAPI.validate(body) { check(problem) }
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
}
