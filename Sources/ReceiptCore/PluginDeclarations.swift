public import Foundation

/// A per-client setting a plugin owns, declared once: the CLI offers it as `--<flag>` under the
/// plugin's name in `client create --help`, checks its value with `check`, and stores it under
/// `key` in the client's settings, or sealed (encrypted, never shown or logged) when `sealed`.
public struct ClientSettingDeclaration: Sendable {
    /// How the command line reads the value.
    public enum Input: Sendable {
        /// The value as given.
        case text
        /// `on` or `off`.
        case onOff
        /// The value names a file; its contents (at most `maxBytes`) are the setting.
        case file(maxBytes: Int)
    }

    /// Without the leading `--`.
    public let flag: String
    /// The stored name, prefixed by the plugin's own name; a sealed setting's prefix is its store
    /// id (`<store>.<name>`), so it is opened only for that store.
    public let key: String
    /// What the help shows after the flag (`PATH`, `BASE64`, `on|off`).
    public let valueName: String
    public let help: String
    public let input: Input
    public let repeatable: Bool
    public let sealed: Bool
    /// On create, when this setting is given and `--environments` is not, the client accepts these.
    public let impliedEnvironments: Set<StoreEnvironment>?
    /// The value to store (normalized), or throws `SettingRejected` saying what is wrong.
    public let check: @Sendable (String) throws -> String

    public init(
        flag: String, key: String, valueName: String, help: String, input: Input = .text, repeatable: Bool = false,
        sealed: Bool = false, impliedEnvironments: Set<StoreEnvironment>? = nil,
        check: @escaping @Sendable (String) throws -> String = { $0 }
    ) {
        self.flag = flag
        self.key = key
        self.valueName = valueName
        self.help = help
        self.input = input
        self.repeatable = repeatable
        self.sealed = sealed
        self.impliedEnvironments = impliedEnvironments
        self.check = check
    }
}

/// Why a setting's value was refused; the CLI prints it after the flag.
public struct SettingRejected: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// How a store names the apps a client registers (bundle ids, package names, ...). A client's
/// identifiers are kept per kind; a store sees only its own kind's.
public struct AppIdentifierKind: Sendable, Hashable {
    /// The storage key and the name in a client's `app_identifiers`, e.g. `bundle_id`.
    public let name: String
    /// The CLI flag, without `--` (repeatable).
    public let flag: String
    public let help: String

    public init(name: String, flag: String, help: String) {
        self.name = name
        self.flag = flag
        self.help = help
    }

    /// Letters, digits, `.`, `_`, `-`; 1 to 255 characters.
    public static func isWellFormed(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 255
            && value.unicodeScalars.allSatisfy {
                CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0)
            }
    }
}

/// A field of the native verify body beside `receipt` that a store's evidence needs (a user id
/// the store checks the receipt against). The core reads it from the body, checks it, and hands it to the provider in
/// `VerificationContext.evidenceFields`.
public struct EvidenceField: Sendable {
    public let name: String
    public let required: Bool
    public let maxLength: Int
    /// For the OpenAPI document and the error message.
    public let description: String

    public init(name: String, required: Bool, maxLength: Int = 256, description: String) {
        self.name = name
        self.required = required
        self.maxLength = maxLength
        self.description = description
    }
}

/// What a plugin adds to the OpenAPI document the service serves: path items (placed under
/// `paths:`), components by section (`schemas`, `parameters`, `responses`, `securitySchemes`,
/// `headers`), properties of the native verify body (a store's evidence fields), and how a store
/// uses the body's shared fields (`receipt`, `product_id`, ...). Each is YAML written at column 0;
/// the document places it at the right indentation.
public struct OpenAPIPart: Sendable {
    public let paths: String
    public let components: [String: String]
    public let evidenceProperties: String
    /// Per shared field of the native verify body, one line of plain text on what this store
    /// takes there; the document adds it to the field's description under the store's name.
    public let sharedFieldNotes: [String: String]

    public init(
        paths: String = "", components: [String: String] = [:], evidenceProperties: String = "",
        sharedFieldNotes: [String: String] = [:]
    ) {
        self.paths = paths
        self.components = components
        self.evidenceProperties = evidenceProperties
        self.sharedFieldNotes = sharedFieldNotes
    }
}

/// The service's settings (environment variables) as a plugin reads them at start-up, and the
/// service's clock, which a plugin reads for every time it needs (tests move it).
public struct PluginEnvironment: Sendable {
    public let variables: [String: String]
    public let now: @Sendable () -> Date

    package init(
        variables: [String: String] = ProcessInfo.processInfo.environment,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.variables = variables
        self.now = now
    }
}

/// What is written around a store: its client settings, the apps it knows, evidence fields,
/// the neutral facts dialects map their wire names from (vendor code, operating systems, evidence
/// shapes), and its part of the OpenAPI document. Declared once by the provider; the CLI, the
/// native API, the dialects and the served document read it from here. No store names a dialect.
public struct StoreDeclaration: Sendable {
    public let store: StoreID
    /// For people: the store's own name.
    public let displayName: String
    public let identifiers: AppIdentifierKind
    public let settings: [ClientSettingDeclaration]
    public let evidenceFields: [EvidenceField]
    /// The kinds of evidence the store proves; anything else is refused before it is asked.
    public let evidenceKinds: Set<EvidenceKind>
    /// The short upper-case code SDKs and gateways name the store by (the vendor's name in
    /// capitals): unique among the served stores.
    public let vendorCode: String
    /// The operating systems the store's apps run on, for dialects that name a device, not a store.
    public let operatingSystems: [OperatingSystem]
    /// The forms of evidence the store's apps hand over, for dialects whose wire format has a
    /// layout per form, or that must tell stores of one operating system apart.
    public let evidenceShapes: Set<EvidenceShape>
    /// Whether evidence is unmistakably this store's (a wrapper only its SDK makes): a quick look,
    /// never a proof, used only to tell apart stores that share an operating system and a shape.
    public let recognizesEvidence: @Sendable (String) -> Bool
    /// Whether an account token the caller sends (`app_account_token`) is well formed for this
    /// store; nil accepts any.
    public let accountTokenIsWellFormed: (@Sendable (String) -> Bool)?
    /// Whether a bare transaction id (`EvidenceKind.transactionID`) is well formed for this store,
    /// checked by dialects before anything is asked or counted; nil accepts any.
    public let transactionIDIsWellFormed: (@Sendable (String) -> Bool)?
    public let openAPI: OpenAPIPart
    /// For a store whose orders the service starts (`OrderStarting`): the field of the
    /// `POST /v1/orders` body that names the buyer's account at the store.
    public let orderAccountField: EvidenceField?
    /// `receiptgate dev <name>` helpers this store offers.
    public let developmentTools: [DevelopmentTool]

    public init(
        store: StoreID, displayName: String, identifiers: AppIdentifierKind, settings: [ClientSettingDeclaration] = [],
        evidenceFields: [EvidenceField] = [], evidenceKinds: Set<EvidenceKind> = [.detected], vendorCode: String,
        operatingSystems: [OperatingSystem], evidenceShapes: Set<EvidenceShape>,
        recognizesEvidence: @escaping @Sendable (String) -> Bool = { _ in false },
        accountTokenIsWellFormed: (@Sendable (String) -> Bool)? = nil,
        transactionIDIsWellFormed: (@Sendable (String) -> Bool)? = nil, openAPI: OpenAPIPart = OpenAPIPart(),
        developmentTools: [DevelopmentTool] = [], orderAccountField: EvidenceField? = nil
    ) {
        self.store = store
        self.displayName = displayName
        self.identifiers = identifiers
        self.settings = settings
        self.evidenceFields = evidenceFields
        self.evidenceKinds = evidenceKinds
        self.vendorCode = vendorCode.uppercased()
        self.operatingSystems = operatingSystems
        self.evidenceShapes = evidenceShapes
        self.recognizesEvidence = recognizesEvidence
        self.accountTokenIsWellFormed = accountTokenIsWellFormed
        self.transactionIDIsWellFormed = transactionIDIsWellFormed
        self.openAPI = openAPI
        self.developmentTools = developmentTools
        self.orderAccountField = orderAccountField
    }
}

/// A store plugin as the registry lists it: its declaration and how to start it.
public struct StorePlugin: Sendable {
    public let declaration: StoreDeclaration
    /// Throws `ConfigurationInvalid` naming the variable that is wrong.
    public let start: @Sendable (PluginEnvironment) throws -> StoreRegistration

    public init(
        _ declaration: StoreDeclaration, start: @escaping @Sendable (PluginEnvironment) throws -> StoreRegistration
    ) {
        self.declaration = declaration
        self.start = start
    }
}

/// A dialect plugin as the registry lists it.
public struct DialectPlugin: Sendable {
    public let name: String
    public let displayName: String
    public let settings: [ClientSettingDeclaration]
    /// Throws `ConfigurationInvalid` naming the variable that is wrong.
    public let start: @Sendable (PluginEnvironment) throws -> any DialectProvider

    public init(
        name: String, displayName: String, settings: [ClientSettingDeclaration] = [],
        start: @escaping @Sendable (PluginEnvironment) throws -> any DialectProvider
    ) {
        self.name = name
        self.displayName = displayName
        self.settings = settings
        self.start = start
    }
}

/// Every plugin one binary serves, in registration order.
public struct PluginList: Sendable {
    public let stores: [StorePlugin]
    public let dialects: [DialectPlugin]

    /// Throws `PluginListInvalid` when two stores share a store id or a vendor code (a dialect
    /// could not tell which one a request means), or two dialects share a name.
    public init(stores: [StorePlugin], dialects: [DialectPlugin]) throws(PluginListInvalid) {
        let declarations = stores.map(\.declaration)
        let clashes =
            Self.repeated(declarations.map(\.store.rawValue)).map { "store id \($0)" }
            + Self.repeated(declarations.map(\.vendorCode)).map { "vendor code \($0)" }
            + Self.repeated(dialects.map(\.name)).map { "dialect name \($0)" }
        guard clashes.isEmpty else { throw PluginListInvalid(clashes: clashes) }
        self.stores = stores
        self.dialects = dialects
    }

    /// The values given more than once, each once, in order of first appearance.
    private static func repeated(_ values: [String]) -> [String] {
        var seen: Set<String> = [], reported: [String] = []
        for value in values where !seen.insert(value).inserted && !reported.contains(value) { reported.append(value) }
        return reported
    }

    public func store(_ id: StoreID) -> StorePlugin? { stores.first { $0.declaration.store == id } }

    /// Every plugin's client settings, stores' first, under each plugin's display name.
    package var clientSettings: [(plugin: String, settings: [ClientSettingDeclaration])] {
        stores.map { ($0.declaration.displayName, $0.declaration.settings) }
            + dialects.map { ($0.displayName, $0.settings) }
    }
}

/// Two plugins claim one name: the registry is refused as it is built.
public struct PluginListInvalid: Error, Sendable, CustomStringConvertible {
    /// `store id X`, `vendor code X`, `dialect name X`: each name claimed more than once.
    public let clashes: [String]
    public var description: String { "plugins share a name: \(clashes.joined(separator: ", "))" }
}

/// Where the service a development tool works with keeps its data and listens, from the same
/// settings as `receiptgate serve`.
public struct DevelopmentSettings: Sendable {
    public let dataDirectory: URL
    /// The service's base URL (`http://127.0.0.1:8080`): `RECEIPTGATE_URL` when set, else its host and port.
    public let serviceURL: String

    public init(dataDirectory: URL, serviceURL: String) {
        self.dataDirectory = dataDirectory
        self.serviceURL = serviceURL
    }
}

/// A development helper a store offers as `receiptgate dev <name>` (e.g. signing a test purchase
/// with a test root), for trying the service out without a device or a store account.
public struct DevelopmentTool: Sendable {
    public let name: String
    /// One line for `receiptgate dev --help`.
    public let summary: String
    /// The whole `receiptgate dev <name> --help`.
    public let help: String
    /// Its options, each taking one value (`--option VALUE`), without the leading `--`.
    public let options: [String]
    /// Runs with the options given and where the service is. Returns what goes to stdout and the
    /// lines for stderr, as they are printed; throws `SettingRejected` for a bad option value.
    public let run:
        @Sendable (_ options: [String: String], _ service: DevelopmentSettings) async throws -> (
            output: String, notices: [String]
        )

    public init(
        name: String, summary: String, help: String, options: [String],
        run:
            @escaping @Sendable (_ options: [String: String], _ service: DevelopmentSettings) async throws -> (
                output: String, notices: [String]
            )
    ) {
        self.name = name
        self.summary = summary
        self.help = help
        self.options = options
        self.run = run
    }
}
