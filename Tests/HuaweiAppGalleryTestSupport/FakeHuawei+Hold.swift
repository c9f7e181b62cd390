import Foundation
import TestSupport

extension FakeHuawei {
    /// Holds order-service requests for tokens starting with `prefix` until `releaseHeld()`.
    package func hold(tokensStartingWith prefix: String) { state.heldTokenPrefix.set(prefix) }

    /// Lets every held request (and any later one) be answered.
    package func releaseHeld() { state.heldTokenPrefix.set(nil) }
}

extension FakeHuawei.State {
    /// Waits while `token` is held (a minute at most, so a test that forgets to release ends).
    func passUnlessHeld(_ token: String?) async {
        guard let token else { return }
        let deadline = ContinuousClock.now + .seconds(60)
        while let prefix = heldTokenPrefix.get(), token.hasPrefix(prefix), ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
    }
}
