public import ReceiptCore

extension AccountLink {
    public static let plugin = DialectPlugin(name: "account-link", displayName: "AccountLink (/iap)") { _ in
        AccountLink()
    }
}
