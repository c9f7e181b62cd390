import Foundation

/// Random test inputs that can be drawn again: a generator seeded from `RECEIPTGATE_TEST_SEED`
/// when it is set, else from a fresh seed. Every failure message carries `replay`, so an input
/// that broke a test once can be had again on any machine.
public struct SeededRandom: RandomNumberGenerator, Sendable {
    public static let variable = "RECEIPTGATE_TEST_SEED"
    public let seed: UInt64
    private var generator: SplitMix64

    public init() {
        self.init(seed: ProcessInfo.processInfo.environment[Self.variable].flatMap { UInt64($0) } ?? UInt64.random(in: 0...UInt64.max))
    }

    public init(seed: UInt64) {
        self.seed = seed
        generator = SplitMix64(seed: seed)
    }

    public mutating func next() -> UInt64 { generator.next() }

    /// What to add to a failure message: the seed, and how to draw the same inputs again.
    public var replay: String { "seed \(seed); \(Self.variable)=\(seed) draws the same inputs" }
}
