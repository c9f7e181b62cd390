import Foundation
import ReceiptCore

/// Parameters of a POST sent either as a form (`application/x-www-form-urlencoded`, what OAuth
/// clients and HTML forms send) or as a JSON object of strings.
enum FormBody {
    static func parameters(_ request: RouteRequest) -> [String: String]? {
        let type = request.headers["content-type"]?.lowercased() ?? ""
        if type.hasPrefix("application/json") {
            guard let object = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any] else { return nil }
            var result: [String: String] = [:]
            for (name, value) in object {
                guard let text = value as? String else { return nil }
                result[name] = text
            }
            return result
        }
        guard type.isEmpty || type.hasPrefix("application/x-www-form-urlencoded"),
              let text = String(data: request.body, encoding: .utf8) else { return nil }
        return decode(text)
    }

    static func decode(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1)
            guard let name = parts.first.flatMap(FormEncoding.decode), result[name] == nil else { continue }
            result[name] = parts.count > 1 ? FormEncoding.decode(parts[1]) ?? "" : ""
        }
        return result
    }
}
