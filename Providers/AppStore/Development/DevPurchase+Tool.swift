import Foundation
import ReceiptCore

extension DevPurchase {
    /// `receiptgate dev purchase`: a StoreKit 2 signed transaction for trying the service out on
    /// a laptop, signed by a development PKI that only a service told to trust it accepts.
    static let tool = DevelopmentTool(
        name: "purchase", summary: "Sign a test StoreKit 2 purchase (never accepted with Apple's root)", help: help,
        options: ["bundle-id", "product-id", "transaction-id", "type", "environment"]
    ) { options, service in
        // Options first: a mistake is reported before any file is written.
        let purchase = try parse(options)
        let directory = service.dataDirectory.appendingPathComponent("dev-pki")
        let (pki, created) = try DevPKI.loadOrCreate(in: directory)
        let now = Date()
        let token = try purchase.signed(with: pki, at: now)
        // Kept, so `dev notify --transaction ID` can tell the service of what became of it.
        try DevPurchaseRecords(pkiDirectory: directory).keep(purchase.payload(at: now))
        // The variable line stands alone so that it can be pasted in front of `receiptgate serve`.
        let root = directory.appendingPathComponent(DevPKI.rootFile).path
        let notices =
            (created ? ["receiptgate: created a development PKI (a test root, not Apple's) in \(directory.path)"] : [])
            + [
                "receiptgate: a service accepts this purchase only when started with:",
                "RECEIPTGATE_APPLE_ROOT_CERTS=\(root)",
            ]
        return (token, notices)
    }

    static func parse(_ options: [String: String]) throws -> DevPurchase {
        guard let bundleID = options["bundle-id"] else { throw SettingRejected("--bundle-id is required") }
        guard let productID = options["product-id"] else { throw SettingRejected("--product-id is required") }
        for (option, value) in [("--bundle-id", bundleID), ("--product-id", productID)]
        where !AppIdentifierKind.isWellFormed(value) {
            throw SettingRejected("\(option) must be letters, digits, '.', '_' or '-', got \"\(value)\"")
        }
        var purchase = DevPurchase(bundleID: bundleID, productID: productID, transactionID: randomTransactionID())
        if let id = options["transaction-id"] {
            guard (1...19).contains(id.count), id.allSatisfy(\.isASCII), id.allSatisfy(\.isNumber) else {
                throw SettingRejected("--transaction-id must be 1 to 19 digits, got \"\(id)\"")
            }
            purchase.transactionID = id
        }
        if let type = options["type"] {
            guard let kind = Kind(rawValue: type) else {
                throw SettingRejected("--type must be consumable, non_consumable or auto_renewable, got \"\(type)\"")
            }
            purchase.kind = kind
        }
        if let environment = options["environment"] {
            switch environment {
            case "sandbox": purchase.environment = .sandbox
            case "production": purchase.environment = .production
            default: throw SettingRejected("--environment must be sandbox or production, got \"\(environment)\"")
            }
        }
        return purchase
    }

    static let help = """
        Usage: receiptgate dev purchase --bundle-id ID --product-id ID [--transaction-id N]
               [--type consumable|non_consumable|auto_renewable] [--environment sandbox|production]

        Prints on stdout a StoreKit 2 signed transaction (JWS, ES256, x5c leaf, intermediate, root)
        shaped like the ones Apple's App Store issues, for POST /v1/verify.

        It is signed by a development PKI, not by Apple: on first use a test root, an intermediate
        and a signing key are written to RECEIPTGATE_DATA_DIR/dev-pki/ (default ./.receiptgate; the
        key with mode 0600). Only a service started with
        RECEIPTGATE_APPLE_ROOT_CERTS=RECEIPTGATE_DATA_DIR/dev-pki/root.pem accepts these purchases; a
        service trusting Apple's root (the default) refuses them, since they do not chain to it.
        Never give that variable to a production service.

          --bundle-id ID         the app's bundle id (a client registered with --bundle-id ID)
          --product-id ID        the product bought
          --transaction-id N     default: a fresh random 16-digit number, so every call is a new purchase
          --type TYPE            consumable (default), non_consumable or auto_renewable (expires in 30 days)
          --environment ENV      sandbox (default) or production
        """
}
