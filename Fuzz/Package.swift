// swift-tools-version:6.0
import PackageDescription

// libFuzzer harnesses, a package of their own so the normal `swift build --build-tests` never
// sees them: an executable without `main` links only against libFuzzer's. Built and run by
// scripts/fuzz.sh (`--sanitize fuzzer --sanitize address`, debug so `@testable import` reaches internals).
let package = Package(
    name: "ReceiptGateFuzz",
    dependencies: [.package(name: "ReceiptGate", path: "..")],
    targets: [
        .executableTarget(
            name: "receiptgate-fuzz",
            dependencies: [.product(name: "ReceiptGateFuzzTargets", package: "ReceiptGate")],
            swiftSettings: [.swiftLanguageMode(.v6), .unsafeFlags(["-parse-as-library"])]
        ),
    ]
)
