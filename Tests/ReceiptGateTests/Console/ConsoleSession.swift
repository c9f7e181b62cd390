import Foundation
import TestSupport
import Testing

/// A browser's part, kept small: a cookie jar, the CSRF token of the last page, forms posted as a
/// browser posts them. For the console's rules (cookies, CSRF, escaping); the browser test
/// (`ConsoleBrowser`) drives the real thing.
final class ConsoleBrowserSession: @unchecked Sendable {
    let port: Int
    private(set) var cookies: [String: String] = [:]
    private(set) var csrf: String?
    private(set) var lastSetCookies: [String] = []
    /// Sent with every request (e.g. what a proxy in front would add).
    var extraHeaders: [String: String] = [:]

    init(port: Int) { self.port = port }

    func get(_ path: String) async throws -> RawHTTP.Response {
        let response = try await RawHTTP.request(port: port, path: path, headers: cookieHeader())
        remember(response)
        return response
    }

    /// Posts `fields` (plus the CSRF token of the last page, unless `csrf` says otherwise).
    func post(
        _ path: String, _ fields: [(String, String)], csrf given: String?? = .none
    ) async throws -> RawHTTP.Response {
        var all = fields
        if let token = given ?? csrf { all.append(("csrf", token)) }
        let body = all.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        var headers = cookieHeader()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
        let response = try await RawHTTP.request(
            port: port, method: "POST", path: path, headers: headers, body: Data(body.utf8))
        remember(response)
        return response
    }

    func signIn(token: String) async throws -> RawHTTP.Response {
        _ = try await get("/console/sign-in")
        return try await post("/console/sign-in", [("token", token)])
    }

    func forget(_ name: String) { cookies[name] = nil }
    func setCookie(_ name: String, _ value: String) { cookies[name] = value }

    private func cookieHeader() -> [String: String] {
        var headers = extraHeaders
        if !cookies.isEmpty {
            headers["Cookie"] = cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(
                separator: "; ")
        }
        return headers
    }

    private func remember(_ response: RawHTTP.Response) {
        lastSetCookies = response.allHeaders("set-cookie")
        for line in lastSetCookies {
            let pair = line.split(separator: ";")[0].split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { continue }
            cookies[pair[0]] = pair[1].isEmpty ? nil : pair[1]
        }
        if let range = response.text.range(of: #"name="csrf" value="[^"]*""#, options: .regularExpression) {
            csrf = String(response.text[range].dropFirst(#"name="csrf" value=""#.count).dropLast())
        }
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(
            withAllowedCharacters: CharacterSet(
                charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")) ?? ""
    }
}
