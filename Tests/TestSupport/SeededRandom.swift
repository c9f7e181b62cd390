import Foundation

/// Random test inputs that can be drawn again: a generator seeded from `RECEIPTGATE_TEST_SEED`
/// when it is set, else from a fresh seed. Every failure message carries `replay`, so an input
/// that broke a test once can be had again on any machine.
package struct SeededRandom: RandomNumberGenerator, Sendable {
    package static let variable = "RECEIPTGATE_TEST_SEED"
    package let seed: UInt64
    private var generator: SplitMix64

    package init() {
        self.init(
            seed: ProcessInfo.processInfo.environment[Self.variable].flatMap { UInt64($0) }
                ?? UInt64.random(in: 0...UInt64.max))
    }

    package init(seed: UInt64) {
        self.seed = seed
        generator = SplitMix64(seed: seed)
    }

    package mutating func next() -> UInt64 { generator.next() }

    /// What to add to a failure message: the seed, and how to draw the same inputs again.
    package var replay: String { "seed \(seed); \(Self.variable)=\(seed) draws the same inputs" }
}
