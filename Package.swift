// swift-tools-version:6.0
import Foundation
import PackageDescription

// One settings list for every target: Swift 6 language mode (strict concurrency is part of it).
let swiftSettings: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

// Debian's jemalloc replaces glibc's malloc for the whole receiptgate process (Swift runtime, libpq,
// libcurl, OpenSSL alike): requests allocate on one thread and free on another, where glibc's arenas
// cost about a tenth of the service's CPU (docs/development.md). RECEIPTGATE_SYSTEM_MALLOC=1 builds it on
// glibc's malloc instead, only so that the difference can be measured again (Benchmarks/paired_runs.py).
let allocator: [LinkerSetting] = ProcessInfo.processInfo.environment["RECEIPTGATE_SYSTEM_MALLOC"] == "1"
    ? [] : [.linkedLibrary("jemalloc")]

let package = Package(
    name: "ReceiptGate",
    products: [
        .executable(name: "receiptgate", targets: ["ReceiptGateCLI"]),
        .executable(name: "receiptgate-bench", targets: ["receiptgate-bench"]),
    ],
    targets: [
        // C libraries from Debian, found through pkg-config. Headers are bare #includes.
        .systemLibrary(name: "COpenSSL", path: "Sources/CSystem/COpenSSL", pkgConfig: "openssl",
                       providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CLibPQ", path: "Sources/CSystem/CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", path: "Sources/CSystem/CCurl", pkgConfig: "libcurl",
                       providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CSystem/CMicroHTTPD", pkgConfig: "libmicrohttpd",
                       providers: [.apt(["libmicrohttpd-dev"])]),
        // Typed wrappers for what Swift cannot call: C variadics, function-like macros, and one
        // OpenSSL function deprecated without a replacement.
        .target(name: "CShims", dependencies: ["CCurl", "CMicroHTTPD", "COpenSSL"]),

        // Threads of our own for blocking calls and background loops; every module below runs on them.
        .target(name: "Workers", swiftSettings: swiftSettings),
        // The hand-written JSON reader and writer of the hot paths; no dependencies.
        .target(name: "JSON", swiftSettings: swiftSettings),
        .target(name: "ReceiptCore", dependencies: ["JSON", "Workers"], swiftSettings: swiftSettings),
        .target(name: "OpenSSLCrypto", dependencies: ["COpenSSL", "CShims", "Workers"], swiftSettings: swiftSettings),
        .target(name: "Postgres", dependencies: ["CLibPQ", "Workers"], swiftSettings: swiftSettings),
        .target(name: "HTTPServer", dependencies: ["CMicroHTTPD", "CShims", "Workers"], swiftSettings: swiftSettings),
        .target(name: "HTTPClient", dependencies: ["CCurl", "CShims", "Workers"], swiftSettings: swiftSettings),
        .target(
            name: "ReceiptGate",
            dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto", "Postgres", "HTTPServer", "HTTPClient"],
            resources: [],
            swiftSettings: swiftSettings
        ),
        // Store providers (see Providers/README.md).
        .target(name: "AppStore", dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto", "HTTPClient"], path: "Providers/AppStore",
                swiftSettings: swiftSettings),
        .target(name: "GooglePlay", dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto", "HTTPClient"], path: "Providers/GooglePlay",
                swiftSettings: swiftSettings),
        .target(name: "AmazonAppstore", dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto", "HTTPClient"], path: "Providers/AmazonAppstore",
                swiftSettings: swiftSettings),
        .target(name: "HuaweiAppGallery", dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto", "HTTPClient"], path: "Providers/HuaweiAppGallery",
                swiftSettings: swiftSettings),
        .target(name: "Stripe", dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto", "HTTPClient"], path: "Providers/Stripe",
                swiftSettings: swiftSettings),
        .target(name: "Xsolla", dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto", "HTTPClient"], path: "Providers/Xsolla",
                swiftSettings: swiftSettings),
        .target(name: "Steam", dependencies: ["JSON", "ReceiptCore", "HTTPClient"], path: "Providers/Steam",
                swiftSettings: swiftSettings),
        // Dialect providers.
        .target(name: "AlogameGateway", dependencies: ["JSON", "ReceiptCore"], path: "Providers/AlogameGateway",
                swiftSettings: swiftSettings),
        .target(name: "HiveAxyl", dependencies: ["JSON", "ReceiptCore"], path: "Providers/HiveAxyl", swiftSettings: swiftSettings),
        .target(name: "AccountLink", dependencies: ["JSON", "ReceiptCore", "OpenSSLCrypto"], path: "Providers/AccountLink",
                swiftSettings: swiftSettings),

        // The plugin registry: every store and dialect this binary serves, in one list.
        .target(name: "Plugins", dependencies: ["ReceiptCore", "AppStore", "GooglePlay", "AmazonAppstore", "AlogameGateway", "HiveAxyl",
                                                "AccountLink", "HuaweiAppGallery", "Stripe", "Xsolla", "Steam"],
                swiftSettings: swiftSettings),

        // The `receiptgate` command (the product keeps the name; the folder does not differ from
        // Sources/ReceiptGate by case alone).
        .executableTarget(
            name: "ReceiptGateCLI",
            dependencies: ["ReceiptGate", "ReceiptCore", "Postgres", "HTTPServer", "Plugins"],
            swiftSettings: swiftSettings,
            linkerSettings: allocator
        ),

        .executableTarget(name: "receiptgate-bench", dependencies: ["AppStore", "OpenSSLCrypto", "HTTPClient"],
                          swiftSettings: swiftSettings),

        // Test helpers: generic ones (databases, processes, raw HTTP), App Store ones (a test PKI,
        // a fake App Store Server API, receipts), and an in-process fake core for plugin tests.
        .target(name: "TestSupport", dependencies: ["Postgres", "HTTPServer", "HTTPClient", "OpenSSLCrypto", "ReceiptCore"], path: "Tests/TestSupport",
                swiftSettings: swiftSettings),
        .target(name: "AppStoreTestSupport", dependencies: ["AppStore", "OpenSSLCrypto", "HTTPServer", "HTTPClient", "TestSupport"],
                path: "Tests/AppStoreTestSupport", swiftSettings: swiftSettings),
        .target(name: "GooglePlayTestSupport", dependencies: ["GooglePlay", "OpenSSLCrypto", "HTTPServer", "HTTPClient", "TestSupport"],
                path: "Tests/GooglePlayTestSupport", swiftSettings: swiftSettings),
        .target(name: "AmazonAppstoreTestSupport", dependencies: ["AmazonAppstore", "OpenSSLCrypto", "HTTPServer", "HTTPClient", "TestSupport"],
                path: "Tests/AmazonAppstoreTestSupport", swiftSettings: swiftSettings),
        .target(name: "HuaweiAppGalleryTestSupport", dependencies: ["HuaweiAppGallery", "OpenSSLCrypto", "HTTPServer", "HTTPClient", "TestSupport"],
                path: "Tests/HuaweiAppGalleryTestSupport", swiftSettings: swiftSettings),
        .target(name: "StripeTestSupport", dependencies: ["Stripe", "OpenSSLCrypto", "HTTPServer", "HTTPClient", "TestSupport"],
                path: "Tests/StripeTestSupport", swiftSettings: swiftSettings),
        .target(name: "XsollaTestSupport", dependencies: ["Xsolla", "HTTPServer", "HTTPClient", "TestSupport"],
                path: "Tests/XsollaTestSupport", swiftSettings: swiftSettings),
        .target(name: "SteamTestSupport", dependencies: ["Steam", "HTTPServer", "HTTPClient", "TestSupport"],
                path: "Tests/SteamTestSupport", swiftSettings: swiftSettings),
        // Asks TestKeys for one key and exits at once; OpenSSLCryptoTests runs it to show that no key is
        // being made when a process using TestKeys exits.
        .executableTarget(name: "TestKeysExitProbe", dependencies: ["OpenSSLCrypto", "TestSupport"], path: "Tests/TestKeysExitProbe",
                          swiftSettings: swiftSettings),
        .target(name: "PluginTestSupport", dependencies: ["ReceiptCore", "OpenSSLCrypto", "TestSupport", "AppStore", "GooglePlay"], path: "Tests/PluginTestSupport",
                swiftSettings: swiftSettings),
        .testTarget(name: "WorkersTests", dependencies: ["Workers", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "JSONTests", dependencies: ["JSON", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "ReceiptCoreTests", dependencies: ["ReceiptCore", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "OpenSSLCryptoTests", dependencies: ["OpenSSLCrypto", "COpenSSL", "TestSupport"],
                    resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "HTTPClientTests", dependencies: ["HTTPClient", "HTTPServer", "TestSupport"], swiftSettings: swiftSettings),
        .testTarget(name: "AppStoreTests", dependencies: ["AppStore", "OpenSSLCrypto", "ReceiptCore", "TestSupport", "AppStoreTestSupport",
                                                          "HTTPServer", "HTTPClient"],
                    resources: [.copy("Fixtures")], swiftSettings: swiftSettings),
        .testTarget(
            name: "ReceiptGateTests",
            dependencies: ["ReceiptGate", "ReceiptCore", "OpenSSLCrypto", "Postgres", "HTTPServer", "TestSupport", "AppStoreTestSupport",
                           "PluginTestSupport", "AppStore", "AlogameGateway", "Plugins",
                           "HiveAxyl", "GooglePlay", "GooglePlayTestSupport", "AccountLink", "AmazonAppstore",
                           "AmazonAppstoreTestSupport", "HuaweiAppGallery", "HuaweiAppGalleryTestSupport", "Stripe",
                           "StripeTestSupport", "Xsolla", "XsollaTestSupport", "Steam", "SteamTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "GooglePlayTests", dependencies: ["GooglePlay", "GooglePlayTestSupport", "ReceiptCore", "OpenSSLCrypto", "HTTPClient",
                                                            "TestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "AmazonAppstoreTests", dependencies: ["AmazonAppstore", "AmazonAppstoreTestSupport", "ReceiptCore", "OpenSSLCrypto",
                                                                "HTTPClient", "TestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "HuaweiAppGalleryTests", dependencies: ["HuaweiAppGallery", "HuaweiAppGalleryTestSupport", "ReceiptCore", "OpenSSLCrypto",
                                                                  "HTTPClient", "TestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "StripeTests", dependencies: ["Stripe", "StripeTestSupport", "ReceiptCore", "OpenSSLCrypto", "HTTPClient",
                                                        "TestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "SteamTests", dependencies: ["Steam", "SteamTestSupport", "ReceiptCore", "TestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "XsollaTests", dependencies: ["Xsolla", "XsollaTestSupport", "ReceiptCore", "HTTPClient", "TestSupport"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "AlogameGatewayTests", dependencies: ["AlogameGateway", "ReceiptCore", "PluginTestSupport", "AppStore", "GooglePlay"],
                    swiftSettings: swiftSettings),
        .testTarget(name: "HiveAxylTests", dependencies: ["HiveAxyl", "ReceiptCore", "PluginTestSupport", "AppStore", "GooglePlay"], swiftSettings: swiftSettings),
        .testTarget(name: "AccountLinkTests", dependencies: ["AccountLink", "ReceiptCore", "OpenSSLCrypto", "PluginTestSupport", "AppStore", "GooglePlay"],
                    swiftSettings: swiftSettings),
    ]
)

// For Fuzz/ only (libFuzzer harnesses in a package of their own, built by scripts/fuzz.sh): the
// modules the harnesses drive. Nothing else depends on this product.
package.products.append(.library(name: "ReceiptGateFuzzTargets",
                                 targets: ["JSON", "ReceiptCore", "OpenSSLCrypto", "AppStore", "AlogameGateway", "ReceiptGate", "TestSupport",
                                           "AppStoreTestSupport", "PluginTestSupport"]))
