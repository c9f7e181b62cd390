/// Request methods as the server sees them: any RFC 9110 token is a method (the router answers
/// 405 for one it does not serve), but only a fixed few become label values in logs and metrics.
package enum HTTPMethod {
    /// The methods logged and counted by name; every other token is `OTHER`.
    package static let observed: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS"]

    /// `method` itself if it is one of `observed` (case-sensitive, as methods are), else `OTHER`:
    /// a client inventing methods (`BREW`, `PROPFIND`, random strings) cannot grow metric label sets.
    package static func normalized(_ method: String) -> String {
        observed.contains(method) ? method : "OTHER"
    }

    /// True if `method` is an RFC 9110 token: one or more of ALPHA, DIGIT and ``!#$%&'*+-.^_`|~``.
    package static func isToken(_ method: String) -> Bool {
        !method.isEmpty && method.utf8.allSatisfy(isTokenCharacter)
    }

    private static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
