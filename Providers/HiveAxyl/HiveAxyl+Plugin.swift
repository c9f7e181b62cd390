public import ReceiptCore

extension HiveAxyl {
    /// `--app-id`: the app ids a token's client may send as X-App-Id. The contract answers a test
    /// purchase as a success marked "Y" and leaves delivering it to the app, so a client created
    /// with app ids accepts sandbox too unless `--environments` says otherwise.
    public static let plugin = DialectPlugin(
        name: "hive-axyl", displayName: "Hive Axyl",
        settings: [
            ClientSettingDeclaration(
                flag: "app-id", key: appIDsSetting, valueName: "ID",
                help: "app id accepted as X-App-Id; repeat for several (--app-id \"\" clears)",
                repeatable: true, impliedEnvironments: [.production, .sandbox]
            ) { id in
                guard AppIdentifierKind.isWellFormed(id) else {
                    throw SettingRejected("must be letters, digits, '.', '_' or '-'")
                }
                return id
            }
        ]
    ) { environment in try HiveAxyl.fromEnvironment(environment.variables) }
}
