import AccountLink
import AlogameGateway
import AppStore
import Foundation
import ReceiptCore
import ReceiptGate

/// The one list of dialects this binary speaks. Adding a dialect: one line here.
enum Dialects {
    static func all() -> [any DialectProvider] {
        [AlogameGateway(), AccountLink()]
    }
}

/// The one list of store providers this binary serves. Adding a store: one line here.
enum StoreProviders {
    static func all() throws -> [StoreRegistration] {
        do {
            return [try AppStoreProvider.fromEnvironment().registration]
        } catch let invalid as AppStoreConfiguration.Invalid {
            throw ServiceConfiguration.Invalid(variable: invalid.variable, problem: invalid.problem)
        }
    }
}
