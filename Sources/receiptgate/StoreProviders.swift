import AccountLink
import AlogameGateway
import AppStore
import GooglePlay
import Foundation
import HiveAxyl
import ReceiptCore
import ReceiptGate

/// The one list of dialects this binary speaks. Adding a dialect: one line here. A dialect
/// with settings reads them from the environment; a bad value stops start-up naming it.
enum Dialects {
    static func all() throws -> [any DialectProvider] {
        [AlogameGateway(),
         try configured { try HiveAxyl.fromEnvironment() },
         AccountLink()]
    }

    private static func configured(_ make: () throws -> any DialectProvider) throws -> any DialectProvider {
        do {
            return try make()
        } catch let invalid as HiveAxyl.Invalid {
            throw ServiceConfiguration.Invalid(variable: invalid.variable, problem: invalid.problem)
        }
    }
}

/// The one list of store providers this binary serves. Adding a store: one line here.
enum StoreProviders {
    static func all() throws -> [StoreRegistration] {
        do {
            return [try AppStoreProvider.fromEnvironment().registration,
                    try GooglePlayProvider.fromEnvironment().registration]
        } catch let invalid as GooglePlayConfiguration.Invalid {
            throw ServiceConfiguration.Invalid(variable: invalid.variable, problem: invalid.problem)
        } catch let invalid as AppStoreConfiguration.Invalid {
            throw ServiceConfiguration.Invalid(variable: invalid.variable, problem: invalid.problem)
        }
    }
}
