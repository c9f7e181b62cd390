/// What the service knew of a client when it authenticated a request, carried with `ClientInfo`
/// from the route's authentication to `prove` and `record`, so that neither looks the client up
/// again. Opaque to plugins (the service's own types never cross into them), and not part of what
/// a client is: two `ClientInfo`s of one client are equal whether or not one carries a record.
package struct AuthenticatedClientRecord: Sendable, Equatable, CustomStringConvertible {
    package let value: (any Sendable)?

    package init(_ value: (any Sendable)? = nil) { self.value = value }

    package static func == (lhs: Self, rhs: Self) -> Bool { true }

    /// Never the record itself: a plugin that logs a `ClientInfo` logs no more than before.
    package var description: String { value == nil ? "none" : "carried" }
}
