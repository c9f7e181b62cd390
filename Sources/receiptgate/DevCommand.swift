import AppStore
import Foundation
import ReceiptCore
import ReceiptGate

/// `receiptgate dev purchase ...`: a StoreKit 2 signed transaction for trying the service out
/// on a laptop, signed by a development PKI that only a service told to trust it accepts.
enum DevCommand {
    static let purchaseOptions: [String: Arguments.Kind] = [
        "bundle-id": .single, "product-id": .single, "transaction-id": .single, "type": .single, "environment": .single,
    ]

    static func run(_ arguments: [String]) async throws {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") { throw HelpRequested(text: HelpText.dev) }
            throw UsageError("missing action: purchase (see receiptgate dev --help)")
        }
        switch action {
        case "purchase":
            let purchase = try parsePurchase(Arguments(Array(arguments.dropFirst()), options: purchaseOptions, help: HelpText.devPurchase))
            // Arguments first: a mistake is reported before configuration is read or files written.
            let dataDirectory = try ServiceConfiguration.fromEnvironment().dataDirectory
            let directory = dataDirectory.appendingPathComponent("dev-pki")
            let (pki, created) = try DevPKI.loadOrCreate(in: directory)
            let token = try purchase.signed(with: pki)
            // The variable line stands alone so that it can be pasted in front of `receiptgate serve`.
            let root = directory.appendingPathComponent(DevPKI.rootFile).path
            printNotices(created ? "receiptgate: created a development PKI (a test root, not Apple's) in \(directory.path)" : nil,
                         "receiptgate: a service accepts this purchase only when started with:",
                         "RECEIPTGATE_APPLE_ROOT_CERTS=\(root)")
            FileHandle.standardOutput.write(Data((token + "\n").utf8))
        case "help":
            throw HelpRequested(text: HelpText.dev)
        default:
            throw UsageError("unknown dev action \"\(action)\" (expected purchase)")
        }
    }

    static func parsePurchase(_ arguments: Arguments) throws -> DevPurchase {
        _ = try arguments.expectPositionals([])
        guard let bundleID = arguments.single("bundle-id") else { throw UsageError("--bundle-id is required") }
        guard let productID = arguments.single("product-id") else { throw UsageError("--product-id is required") }
        for (option, value) in [("--bundle-id", bundleID), ("--product-id", productID)] where !AppIdentifierKind.isWellFormed(value) {
            throw UsageError("\(option) must be letters, digits, '.', '_' or '-', got \"\(value)\"")
        }
        var purchase = DevPurchase(bundleID: bundleID, productID: productID,
                                   transactionID: DevPurchase.randomTransactionID())
        if let id = arguments.single("transaction-id") {
            guard (1...19).contains(id.count), id.allSatisfy(\.isASCII), id.allSatisfy(\.isNumber) else {
                throw UsageError("--transaction-id must be 1 to 19 digits, got \"\(id)\"")
            }
            purchase.transactionID = id
        }
        if let type = arguments.single("type") {
            guard let kind = DevPurchase.Kind(rawValue: type) else {
                throw UsageError("--type must be consumable, non_consumable or auto_renewable, got \"\(type)\"")
            }
            purchase.kind = kind
        }
        if let environment = arguments.single("environment") {
            switch environment {
            case "sandbox": purchase.environment = .sandbox
            case "production": purchase.environment = .production
            default: throw UsageError("--environment must be sandbox or production, got \"\(environment)\"")
            }
        }
        return purchase
    }

    /// Notices go to stderr so that stdout is only the JWS (`> purchase.jws` keeps just the token).
    private static func printNotices(_ lines: String?...) {
        FileHandle.standardError.write(Data(lines.compactMap { $0.map { $0 + "\n" } }.joined().utf8))
    }
}
