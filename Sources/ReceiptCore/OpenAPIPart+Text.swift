/// Helpers for plugins that write their part of the OpenAPI document from the stores' facts,
/// where a generated name or note lands inside YAML.
extension OpenAPIPart {
    /// `text` as a YAML double-quoted scalar (a JSON string literal), safe anywhere a value goes,
    /// whatever a store's note or name holds (`:`, `#`, quotes, a code YAML would read as a boolean).
    public static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.value < 0x20 {
                    out +=
                        "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                        + String(scalar.value, radix: 16)
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// A YAML flow sequence of quoted values: `["A", "B"]`.
    public static func flowList(_ values: [String]) -> String {
        "[" + values.map(quoted).joined(separator: ", ") + "]"
    }

    /// `text` with every line but empty ones indented by `spaces`, for a block placed under a key.
    public static func indented(_ text: String, by spaces: Int) -> String {
        let indentation = String(repeating: " ", count: spaces)
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.isEmpty ? "" : indentation + $0 }
            .joined(separator: "\n")
    }
}
