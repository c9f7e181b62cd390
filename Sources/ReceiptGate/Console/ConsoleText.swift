import Foundation

/// How the console writes values a person reads: clients by name (the id on hover), long ids
/// shortened (the full value on hover), money in its currency.
struct ClientNames: Sendable {
    let names: [String: String]

    init(_ clients: [Client]) {
        names = Dictionary(clients.map { ($0.clientID, $0.name) }, uniquingKeysWith: { first, _ in first })
    }

    /// The client's name with its id on hover; an unknown id as itself.
    func show(_ id: String?) -> HTML {
        guard let id, !id.isEmpty else { return "" }
        guard let name = names[id] else { return "<code>\(id)</code>" }
        return "<span class=\"client\" title=\"\(id)\">\(name)</span>"
    }
}

enum ConsoleText {
    /// A value longer than `kept` characters (a UUID, a long store id) as its start and end, with
    /// the full value on hover and for a screen reader.
    static func short(_ value: String?, kept: Int = 18) -> HTML {
        guard let value, !value.isEmpty else { return "" }
        guard value.count > kept else { return "<code>\(value)</code>" }
        let head = String(value.prefix(kept / 2 + 2)), tail = String(value.suffix(kept / 2 - 3))
        return "<code class=\"short\" title=\"\(value)\" aria-label=\"\(value)\">\(head)…\(tail)</code>"
    }

    /// Milliunits as an amount to the hundredth (half away from zero) with its currency: `12.99 EUR`.
    static func money(_ milliunits: Int64, _ currency: String) -> String {
        let cents = (milliunits.magnitude + 5) / 10
        let fraction = String(cents % 100)
        let sign = milliunits < 0 && cents > 0 ? "-" : ""
        let amount = "\(sign)\(cents / 100).\(fraction.count == 1 ? "0" : "")\(fraction)"
        return currency.isEmpty ? "\(amount) (no currency)" : "\(amount) \(currency)"
    }

    static func percent(_ share: Double?) -> String {
        guard let share else { return "none" }
        return String(format: "%.1f %%", share * 100)
    }
}
