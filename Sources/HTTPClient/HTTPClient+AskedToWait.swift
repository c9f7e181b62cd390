public import Foundation

extension HTTPClient.Response {
    /// How long the answer's `Retry-After` asks to be left alone, at most a day. The client has
    /// already waited and retried by then; a longer wait is passed on so that a poll's next run
    /// comes no sooner than the store asked, and a wrong header cannot stop it for weeks.
    public func askedToWait(now: Date = Date()) -> Duration? {
        header("Retry-After").flatMap { HTTPClient.parseRetryAfter($0, now: now) }.map { min($0, .seconds(86_400)) }
    }
}
