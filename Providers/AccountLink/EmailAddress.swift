import Foundation

/// The one rule for an address this dialect will mail: checked over the whole string, so nothing
/// rides after it (a trailing CR/LF would otherwise reach the mail's headers).
enum EmailAddress {
    static let maxLength = 254

    /// The address, trimmed of surrounding spaces, or nil when it is not one: printable ASCII
    /// only, one `@`, a local part and a dotted domain, none of the characters that need quoting.
    static func validated(_ given: String) -> String? {
        let address = given.trimmingCharacters(in: .init(charactersIn: " "))
        guard !address.isEmpty, address.utf8.count <= maxLength else { return nil }
        let forbidden = Set("<>()[],;:\"\\@ ".utf8)
        let parts = address.utf8.split(separator: UInt8(ascii: "@"), omittingEmptySubsequences: false)
        guard parts.count == 2, let local = parts.first, let domain = parts.last, !local.isEmpty, local.count <= 64
        else { return nil }
        for part in [local, domain] {
            guard part.allSatisfy({ (0x21...0x7e).contains($0) && !forbidden.contains($0) }) else { return nil }
        }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard labels.count >= 2, labels.allSatisfy({ !$0.isEmpty }) else { return nil }
        return address
    }
}
