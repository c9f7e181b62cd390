/// An HTTP status as stores answer it: the ones their tables name, by name, and any other kept as
/// it came (a store's own statuses, outside the standard ones, are declared beside its table).
public struct HTTPStatus: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }
    public init(_ rawValue: Int) { self.rawValue = rawValue }

    public static let badRequest = Self(400)
    public static let unauthorized = Self(401)
    public static let forbidden = Self(403)
    public static let notFound = Self(404)
    public static let gone = Self(410)
    public static let tooManyRequests = Self(429)

    public var isSuccess: Bool { (200..<300).contains(rawValue) }
    public var isServerError: Bool { (500..<600).contains(rawValue) }
    public var description: String { String(rawValue) }
}
