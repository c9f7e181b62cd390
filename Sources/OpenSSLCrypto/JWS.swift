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
        try self.init(parts: try Parts(splitting: token))
    }

    public init(parts: Parts) throws {
        guard let headerBytes = Base64.urlDecode(bytes: parts.headerSegment), !headerBytes.isEmpty else {
            throw CryptoError(.malformedJWS, "header is not base64url")
        }
        try self.init(parts: parts, header: try Self.decodeHeader(headerBytes))
    }

    /// From parts whose header the caller already decoded (and, say, cached by segment).
    public init(parts: Parts, header: JWSHeader) throws {
        self.header = header
        payload = parts.payload
        signature = parts.signature
        signingInput = parts.signingInput
    }

    package static func decodeHeader(_ bytes: Data) throws -> JWSHeader {
        do {
            return try JSONDecoder().decode(JWSHeader.self, from: bytes)
        } catch {
            throw CryptoError(.malformedJWS, "header is not a JSON object with the expected field types")
        }
    }

    /// A compact JWS split into its segments, payload and signature decoded, the header kept as
    /// its exact text, not yet checked (which identifies it, e.g. as a cache key).
    public struct Parts: Sendable {
        public let headerSegment: Data
        public let payload: Data
        public let signature: Data
        public let signingInput: Data

        public init(splitting token: String) throws {
            var token = token
            (headerSegment, payload, signature, signingInput) = try token.withUTF8 { bytes in
                // Work on the UTF-8 bytes: splitting a String by Character walks grapheme clusters.
                guard let first = bytes.firstIndex(of: UInt8(ascii: ".")),
                    let second = bytes[(first + 1)...].firstIndex(of: UInt8(ascii: ".")),
                    bytes[(second + 1)...].firstIndex(of: UInt8(ascii: ".")) == nil
                else { throw CryptoError(.malformedJWS, "a compact JWS has exactly three dot-separated segments") }
                // The header's alphabet is checked where it is decoded (`CompactJWS(parts:)`); a
                // caller that finds this exact segment in its cache of verified headers skips both.
                let header = UnsafeBufferPointer(rebasing: bytes[0..<first])
                guard !header.isEmpty else { throw CryptoError(.malformedJWS, "header is not base64url") }
                guard let payload = Base64.urlDecode(bytes: UnsafeBufferPointer(rebasing: bytes[(first + 1)..<second]))
                else {
                    throw CryptoError(.malformedJWS, "payload is not base64url")
                }
                guard let signature = Base64.urlDecode(bytes: UnsafeBufferPointer(rebasing: bytes[(second + 1)...])),
                    !signature.isEmpty
                else {
                    throw CryptoError(.malformedJWS, "signature is not base64url")
                }
                return (Data(header), payload, signature, Data(UnsafeBufferPointer(rebasing: bytes[0..<second])))
            }
        }
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
        let signature =
            key.isP256 ? try key.signES256(Data(signingInput.utf8)) : try key.signRS256(Data(signingInput.utf8))
        return signingInput + "." + Base64.urlEncode(signature)
    }

    /// Signs a JSON-encodable claims object (a JWT).
    public static func sign(
        claims: some Encodable, header: JWSHeader = JWSHeader(typ: "JWT"), key: PrivateKey
    ) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try sign(payload: try encoder.encode(claims), header: header, key: key)
    }
}
