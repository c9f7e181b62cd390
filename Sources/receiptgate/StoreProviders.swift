import AccountLink
import AlogameGateway
import AppStore
import Crypto
import GooglePlay
import Foundation
import HiveAxyl
import ReceiptCore
import ReceiptGate

/// The one list of dialects this binary speaks. Adding a dialect: one line here. A dialect
/// with settings reads them from the environment; a bad value stops start-up naming it.
enum Dialects {
    static func all() throws -> [any DialectProvider] {
        [AlogameGateway(), try HiveAxyl.fromEnvironment(), AccountLink()]
    }
}

/// The one list of store providers this binary serves. Adding a store: one line here.
enum StoreProviders {
    /// A bad setting throws `ConfigurationInvalid`, which stops start-up naming the variable.
    static func all(_ configuration: ServiceConfiguration) throws -> [StoreRegistration] {
        [try AppStoreProvider.fromEnvironment(es256: configuration.es256Verifier).registration,
         try GooglePlayProvider.fromEnvironment().registration]
    }
}
