import Foundation
package import ReceiptCore

/// The verify routes' envelope, `{"result": {"code", "message"}, "data": object or null}`, and
/// this dialect's one status table. Code 100 is the only success; every other code comes with
/// `data: null` and the HTTP status that says why.
package struct HiveAxylResult: Error, Sendable, Equatable {
    package let status: Int
    package let code: Int
    package let message: String

    package static let success = HiveAxylResult(status: 200, code: 100, message: "SUCCESS")

    package static func invalid(_ message: String) -> HiveAxylResult {
        HiveAxylResult(status: 400, code: 4000, message: message)
    }
    package static func unauthorized(_ message: String) -> HiveAxylResult {
        HiveAxylResult(status: 401, code: 4010, message: message)
    }
    package static func forbidden(_ message: String) -> HiveAxylResult {
        HiveAxylResult(status: 403, code: 4030, message: message)
    }

    /// The shared error code → (HTTP status, this dialect's code). Written once, here.
    package static func code(for error: ErrorCode) -> (status: Int, code: Int) {
        switch error {
        case .missingFields, .invalidField, .notFound, .payloadTooLarge: (400, 4000)
        case .unauthorized: (401, 4010)
        case .forbidden: (403, 4030)
        case .duplicateTransaction: (409, 4090)
        case .environmentMismatch: (412, 4120)
        case .verificationFailed, .bundleMismatch, .accountMismatch: (422, 4220)
        case .productMismatch: (422, 4221)
        case .rateLimited: (429, 4290)
        case .verifierError: (502, 5020)
        }
    }

    package static func from(_ error: ErrorCode, message: String) -> HiveAxylResult {
        let (status, code) = code(for: error)
        return HiveAxylResult(status: status, code: code, message: message)
    }

    /// A store refusal: a retryable one is a 502 whatever its code (trying again may succeed),
    /// and the message names the store's reason. A verifier error that is not retryable (the
    /// store's credentials not configured) is a 502 too, but says what is wrong instead of inviting a retry.
    static func from(_ error: StoreVerificationError) -> HiveAxylResult {
        if error.isRetryable {
            return HiveAxylResult(
                status: 502, code: 5020, message: "store unreachable (\(error.reason)); safe to retry")
        }
        if error.code == .verifierError {
            return HiveAxylResult(status: 502, code: 5020, message: "\(error.reason): \(error.message)")
        }
        return from(error.code, message: "\(error.reason): \(error.message)")
    }

    static let unavailable = HiveAxylResult(
        status: 502, code: 5020, message: "verification is unavailable right now; safe to retry")
}

/// Encodes the envelope with `data` always present (null on failure).
struct HiveAxylEnvelope<Payload: Encodable>: Encodable {
    let result: HiveAxylResult
    let data: Payload?

    enum Keys: String, CodingKey { case result, data }
    enum ResultKeys: String, CodingKey { case code, message }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        var result = container.nestedContainer(keyedBy: ResultKeys.self, forKey: .result)
        try result.encode(self.result.code, forKey: .code)
        try result.encode(self.result.message, forKey: .message)
        if let data { try container.encode(data, forKey: .data) } else { try container.encodeNil(forKey: .data) }
    }
}

extension HiveAxylResult {
    /// This result as a response with no data.
    var response: RouteResponse {
        .json(HiveAxylEnvelope<Int>(result: self, data: nil), status: status)
    }

    static func success(_ data: some Encodable) -> RouteResponse {
        .json(HiveAxylEnvelope(result: .success, data: data))
    }
}
