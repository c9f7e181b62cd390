import Foundation

/// How mail leaves: an SMTP server reached through libcurl.
public struct SMTPSettings: Sendable, Equatable {
    /// `smtp://host:587` (STARTTLS required unless `insecure`) or `smtps://host:465`.
    public var url: String
    public var user: String?
    public var password: String?
    public var from: String
    /// `RECEIPTGATE_SMTP_INSECURE=on`: plain SMTP allowed (a local relay, a test sink).
    public var insecure = false

    public init(url: String, user: String? = nil, password: String? = nil, from: String, insecure: Bool = false) {
        self.url = url
        self.user = user
        self.password = password
        self.from = from
        self.insecure = insecure
    }
}

extension ServiceConfiguration {
    /// The issuer of OpenID tokens and the base of links in e-mails; without
    /// `RECEIPTGATE_PUBLIC_URL`, the address this process listens on.
    public func issuer(port: Int) -> String {
        if let publicURL { return publicURL }
        let host = host.contains(":") ? "[\(host)]" : host
        return "http://\(host):\(port)"
    }

    mutating func readAccountSettings(
        value: (String) -> String?, integer: (String, ClosedRange<Int>) throws -> Int?
    ) throws {
        if let url = value("RECEIPTGATE_PUBLIC_URL") {
            guard let parsed = URL(string: url), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil,
                parsed.query == nil, !url.hasSuffix("/")
            else {
                throw Invalid(
                    variable: "RECEIPTGATE_PUBLIC_URL",
                    problem: "must be an http(s) URL without a trailing slash or query, e.g. https://iap.example.com")
            }
            publicURL = url
        }
        if let seconds = try integer("RECEIPTGATE_ACCESS_TOKEN_SECONDS", 60...86_400) {
            accessTokenLifetimeSeconds = seconds
        }
        guard let url = value("RECEIPTGATE_SMTP_URL") else { return }
        let scheme = url.split(separator: ":").first.map { $0.lowercased() }
        guard scheme == "smtp" || scheme == "smtps", URL(string: url)?.host != nil else {
            throw Invalid(variable: "RECEIPTGATE_SMTP_URL", problem: "must be smtp://host:port or smtps://host:port")
        }
        guard let from = value("RECEIPTGATE_MAIL_FROM"), from.contains("@"), !from.contains("\r"), !from.contains("\n")
        else {
            throw Invalid(
                variable: "RECEIPTGATE_MAIL_FROM",
                problem: "must be set to the sender address when RECEIPTGATE_SMTP_URL is")
        }
        let insecure = value("RECEIPTGATE_SMTP_INSECURE")?.lowercased()
        guard insecure == nil || ["on", "off"].contains(insecure ?? "") else {
            throw Invalid(variable: "RECEIPTGATE_SMTP_INSECURE", problem: "must be on or off")
        }
        smtp = SMTPSettings(
            url: url, user: value("RECEIPTGATE_SMTP_USER"), password: value("RECEIPTGATE_SMTP_PASSWORD"), from: from,
            insecure: insecure == "on")
    }
}
