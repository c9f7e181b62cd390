import Foundation
import JSON
import ReceiptCore

/// Parameters of a POST sent either as a form (`application/x-www-form-urlencoded`, what OAuth
/// clients and HTML forms send, read by `FormEncoding`'s rules) or as a JSON object of strings.
enum FormBody {
    static func parameters(_ request: RouteRequest) -> [String: String]? {
        let type = request.headers["content-type"]?.lowercased() ?? ""
        if type.hasPrefix("application/json") {
            guard let object = JSONValue(parsing: request.body)?.object else { return nil }
            var result: [String: String] = [:]
            for (name, value) in object {
                guard let text = value.string else { return nil }
                result[name] = text
            }
            return result
        }
        guard type.isEmpty || type.hasPrefix("application/x-www-form-urlencoded"),
            let text = String(data: request.body, encoding: .utf8)
        else { return nil }
        // A repeated or undecodable parameter is not a request to guess at.
        return try? FormEncoding.parameters(text)
    }
}
