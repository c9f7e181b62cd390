import Foundation
import OpenSSLCrypto
import Synchronization

/// The one check of the admin token, for the admin API and the console's sign-in alike, and one
/// instance of it per process: a guesser gains nothing by taking turns between the two.
///
/// The token is compared as SHA-256 digests in constant time, so neither its length nor a prefix
/// leaks. Wrong guesses are counted per caller network (`RateLimiter.addressKey`: an IPv6 caller
/// per /64); the right token always passes, so nobody can lock the operator out by guessing from
/// the address a proxy or tunnel shares with them.
final class AdminTokenGate: Sendable {
    enum Verdict: Equatable {
        case accepted
        /// A wrong token, counted; `firstFromCaller` for the first of its caller's window (the
        /// one worth a log line).
        case refused(firstFromCaller: Bool)
        /// Too many wrong tokens from this caller: not even compared until `retryAfter` seconds pass.
        case throttled(retryAfter: Int)
    }

    private let digest: Data
    private let throttle: AdminTokenThrottle

    init(token: String, throttle: AdminTokenThrottle) throws {
        digest = try SHA256.hash(Data(token.utf8))
        self.throttle = throttle
    }

    /// `given` is what the caller presented (nil: nothing); `callerAddress` is the caller as the
    /// trusted-proxy rule names it.
    func check(_ given: String?, callerAddress: String) -> Verdict {
        if let given, let presented = try? SHA256.hash(Data(given.utf8)), ConstantTime.equals(presented, digest) {
            return .accepted
        }
        let network = RateLimiter.addressKey(callerAddress)
        if let retryAfter = throttle.secondsHeldBack(network) { return .throttled(retryAfter: retryAfter) }
        return .refused(firstFromCaller: throttle.failed(network))
    }
}

/// Wrong admin tokens per caller network: ten within a minute of the first, then nothing more is
/// compared until that minute is over. In memory and bounded (a flood of addresses resets it
/// rather than growing it); the token itself is long enough that this only keeps the log quiet
/// and guessing slow.
final class AdminTokenThrottle: Sendable {
    static let failuresPerMinute = 10
    static let addressesKept = 10_000

    /// When each network's minute began, and its wrong tokens since.
    private let failures = Mutex<[String: (since: Date, count: Int)]>([:])
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date) { self.now = now }

    /// Nil when `network` may try again; else the whole seconds until its minute is over.
    func secondsHeldBack(_ network: String) -> Int? {
        let now = now()
        return failures.withLock { failures in
            guard let entry = Self.current(failures[network], now: now), entry.count >= Self.failuresPerMinute else {
                return nil
            }
            return max(1, Int(entry.since.addingTimeInterval(60).timeIntervalSince(now).rounded(.up)))
        }
    }

    /// Counts a failure; true for the first of this network's minute.
    func failed(_ network: String) -> Bool {
        let now = now()
        return failures.withLock { failures in
            let entry = Self.current(failures[network], now: now)
            if entry == nil, failures.count >= Self.addressesKept {
                failures = failures.filter { now.timeIntervalSince($0.value.since) < 60 }
                if failures.count >= Self.addressesKept { failures.removeAll(keepingCapacity: true) }
            }
            let counted = (since: entry?.since ?? now, count: (entry?.count ?? 0) + 1)
            failures[network] = counted
            return counted.count == 1
        }
    }

    /// The entry while its minute lasts.
    private static func current(_ entry: (since: Date, count: Int)?, now: Date) -> (since: Date, count: Int)? {
        guard let entry, now.timeIntervalSince(entry.since) < 60 else { return nil }
        return entry
    }
}
