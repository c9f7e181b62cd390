public import Foundation

/// The protected header fields ReceiptGate reads. Unknown fields are ignored.
public struct JWSHeader: Codable, Sendable, Equatable {
    public var alg: String?
    public var kid: String?
    public var typ: String?
    /// Base64 (standard alphabet, not base64url) DER certificates, leaf first (RFC 7515 §4.1.6).
    public var x5c: [String]?

    public init(alg: String? = nil, kid: String? = nil, typ: String? = nil, x5c: [String]? = nil) {
        self.alg = alg
        self.kid = kid
        self.typ = typ
        self.x5c = x5c
    }
}

/// A JWS in compact serialization (RFC 7515 §7.1): `header.payload.signature`, each part
/// strict base64url. Parsing checks only the shape; `isValidSignature` checks the signature.
public struct CompactJWS: Sendable {
    public let header: JWSHeader
    public let payload: Data
    public let signature: Data
    /// `BASE64URL(header) "." BASE64URL(payload)`, exactly as received: the bytes that were signed.
    public let signingInput: Data

    public init(parsing token: String) throws {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw CryptoError(.malformedJWS, "a compact JWS has exactly three dot-separated segments, found \(parts.count)")
        }
        guard let headerBytes = Base64.urlDecode(String(parts[0])), !headerBytes.isEmpty else {
            throw CryptoError(.malformedJWS, "header is not base64url")
        }
        guard let payload = Base64.urlDecode(String(parts[1])) else {
            throw CryptoError(.malformedJWS, "payload is not base64url")
        }
        guard let signature = Base64.urlDecode(String(parts[2])), !signature.isEmpty else {
            throw CryptoError(.malformedJWS, "signature is not base64url")
        }
        do {
            header = try JSONDecoder().decode(JWSHeader.self, from: headerBytes)
        } catch {
            throw CryptoError(.malformedJWS, "header is not a JSON object with the expected field types")
        }
        self.payload = payload
        self.signature = signature
        signingInput = Data("\(parts[0]).\(parts[1])".utf8)
    }

    /// Checks the signature with `key` under the header's `alg`, which must be one of
    /// `allowedAlgorithms` (never trust `alg` alone: that is how "none" and key-confusion attacks work).
    public func isValidSignature(using key: PublicKey, allowedAlgorithms: Set<String> = ["ES256"]) -> Bool {
        guard let alg = header.alg, allowedAlgorithms.contains(alg) else { return false }
        switch alg {
        case "ES256": return key.isValidES256(signature: signature, for: signingInput)
        case "RS256": return key.isValidRS256(signature: signature, for: signingInput)
        default: return false
        }
    }

    /// Signs `payload` and returns the compact serialization. `header.alg` is set from the key
    /// (ES256 for P-256, RS256 for RSA).
    public static func sign(payload: Data, header: JWSHeader = JWSHeader(), key: PrivateKey) throws -> String {
        var header = header
        header.alg = key.isP256 ? "ES256" : key.isRSA ? "RS256" : nil
        guard header.alg != nil else { throw CryptoError(.unsupportedAlgorithm, "key is neither P-256 nor RSA") }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let signingInput = Base64.urlEncode(try encoder.encode(header)) + "." + Base64.urlEncode(payload)
        let signature = key.isP256 ? try key.signES256(Data(signingInput.utf8)) : try key.signRS256(Data(signingInput.utf8))
        return signingInput + "." + Base64.urlEncode(signature)
    }

    /// Signs a JSON-encodable claims object (a JWT).
    public static func sign(claims: some Encodable, header: JWSHeader = JWSHeader(typ: "JWT"), key: PrivateKey) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try sign(payload: try encoder.encode(claims), header: header, key: key)
    }
}
