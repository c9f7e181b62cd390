import Testing

@testable import HTTPClient

/// What a name was checked and pinned to is reused only for the same destination under the same
/// policy, and only until it expires.
@Suite struct ResolvedNamesTests {
    let start = ContinuousClock.now
    let pin = "hooks.example.com:443:203.0.113.7"

    @Test func aCheckedNameIsReusedUntilItExpires() {
        let names = ResolvedNames(lifetime: .seconds(30))
        let url = "https://hooks.example.com/receipts"
        #expect(names.pin(for: url, policy: .publicOnly, now: start) == nil, "nothing is known before a check")
        names.remember(pin, for: url, policy: .publicOnly, now: start)
        #expect(
            names.pin(for: "https://HOOKS.example.com/other", policy: .publicOnly, now: start + .seconds(29))
                == .some(pin))
        #expect(
            names.pin(for: url, policy: .publicOnly, now: start + .seconds(30)) == nil,
            "an expired entry asks DNS again")
        #expect(names.pin(for: url, policy: .publicOnly, now: start + .seconds(1)) == nil, "an expired entry is gone")
    }

    @Test func aPinBelongsToItsPolicySchemeAndPort() {
        let names = ResolvedNames()
        names.remember(pin, for: "https://hooks.example.com/a", policy: .anyAddressPinned, now: start)
        #expect(names.pin(for: "https://hooks.example.com/a", policy: .publicOnly, now: start) == nil)
        #expect(names.pin(for: "http://hooks.example.com/a", policy: .anyAddressPinned, now: start) == nil)
        #expect(names.pin(for: "https://hooks.example.com:8443/a", policy: .anyAddressPinned, now: start) == nil)
        #expect(names.pin(for: "https://hooks.example.com/b", policy: .anyAddressPinned, now: start) == .some(pin))
    }

    @Test func theAuthorityDecidesWhateverFollowsIt() {
        let names = ResolvedNames()
        names.remember(pin, for: "https://hooks.example.com/a", policy: .publicOnly, now: start)
        for same in ["https://hooks.example.com", "https://hooks.example.com?x=1", "HTTPS://hooks.example.com#f"] {
            #expect(names.pin(for: same, policy: .publicOnly, now: start) == .some(pin), "\(same)")
        }
        for other in [
            "https://hooks.example.com.evil.test/a", "https://evil.test/hooks.example.com", "hooks.example.com",
            "https:///hooks.example.com", "https:/hooks.example.com", "https://", "https://@hooks.example.com",
            "https://hooks.example.com@evil.test/a",
        ] {
            #expect(names.pin(for: other, policy: .publicOnly, now: start) == nil, "\(other)")
        }
    }

    @Test func spellingsThatDifferPastASCIIAreCheckedApart() {
        let names = ResolvedNames()
        names.remember(pin, for: "https://x\u{E5}.example/a", policy: .publicOnly, now: start)
        #expect(names.pin(for: "https://x\u{E5}.example/b", policy: .publicOnly, now: start) == .some(pin))
        #expect(
            names.pin(for: "https://xa\u{30A}.example/a", policy: .publicOnly, now: start) == nil,
            "a canonically equivalent spelling is other bytes, checked on its own")
    }

    @Test func itHoldsNoMoreThanItsCapacity() {
        let names = ResolvedNames(capacity: 2)
        for index in 0..<3 {
            names.remember(pin, for: "https://h\(index).example.com/", policy: .publicOnly, now: start)
        }
        let kept = (0..<3).filter {
            names.pin(for: "https://h\($0).example.com/", policy: .publicOnly, now: start) != nil
        }
        #expect(kept.count <= 2)
        #expect(kept.contains(2), "the newest entry is kept")
    }
}
