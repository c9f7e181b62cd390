import Foundation
import OpenSSLCrypto
import Postgres
public import ReceiptCore

/// Clients in Postgres. Secrets are stored only as AES-256-GCM boxes and returned only by
/// `create` and `rotateSecret` (to show once), `secret(for:)` (to sign what is sent to the client)
/// and `authenticationEntry(for:)` (to check a signature, through the `ClientDirectory`).
public struct ClientRepository: Sendable {
    let pool: PostgresPool
    let secrets: SecretBox
    /// The read standby (DATABASE_READ_URL), which authenticates clients while the primary cannot.
    let standby: PostgresPool?

    public init(database: Database, secrets: SecretBox) {
        self.init(pool: database.pool, secrets: secrets)
    }

    init(pool: PostgresPool, secrets: SecretBox, standby: PostgresPool? = nil) {
        self.pool = pool
        self.secrets = secrets
        self.standby = standby
    }

    public func create(_ settings: ClientSettings) async throws -> (client: Client, secret: String) {
        guard let name = settings.name else { throw ClientStoreError.invalid("a client needs a name") }
        let clientID = Self.idPrefix + Hex.encode(SecureRandom.bytes(Self.idRandomBytes))
        let secret = Self.newSecret()
        let box = try secrets.seal(secret, owner: clientID)
        let environments = (settings.environments ?? [.production]).map(\.rawValue)
        let gameID: Int64? = settings.gameID ?? nil
        let refundURL: String? = settings.refundCallbackURL ?? nil
        let webhookURL: String? = settings.webhookURL ?? nil
        let deliveryURL: String? = settings.deliveryURL ?? nil
        let sealed = try Self.seal(
            settings.sealedSettings.compactMapValues { $0 }, clientID: clientID, secrets: secrets)
        let rows = try await pool.query(
            """
            INSERT INTO clients (id, name, game_id, app_identifiers, environments, refund_callback_url, refund_callback_format,
                                 webhook_url, delivery_url, secret_ciphertext, settings, sealed_settings)
            VALUES (\(clientID), \(name), \(gameID), jsonb_strip_nulls(\(try Self.json(settings.appIdentifiers))::jsonb), \(environments),
                    \(refundURL), \(settings.refundCallbackFormat ?? ""), \(webhookURL), \(deliveryURL), \(box),
                    jsonb_strip_nulls(\(try Self.json(settings.settings))::jsonb), \(sealed))
            RETURNING \(unescaped: Self.columns)
            """)
        return (try Self.decode(rows[0]), secret)
    }

    public func list() async throws -> [Client] {
        try await pool.query("SELECT \(unescaped: Self.columns) FROM clients ORDER BY created_at, id").map(Self.decode)
    }

    public func find(_ clientID: String) async throws -> Client? {
        try await pool.query("SELECT \(unescaped: Self.columns) FROM clients WHERE id = \(clientID)").first.map(
            Self.decode)
    }

    /// The oldest enabled client that registered this app under this kind of identifier (one
    /// Android package may be one client's app in one store and another client's in another).
    public func find(appIdentifier: String, kind: AppIdentifierKind) async throws -> Client? {
        try await pool.query(
            """
            SELECT \(unescaped: Self.columns) FROM clients
            WHERE disabled_at IS NULL AND app_identifiers -> \(kind.name) ? \(appIdentifier)
            ORDER BY created_at, id LIMIT 1
            """
        ).first.map(Self.decode)
    }

    /// Changes what `settings` gives. A change of game or environments changes what players own
    /// under the catalogs of the client and, for a game, of every client of the game it leaves and
    /// the one it joins: both games are held as a catalog change holds its game
    /// (`ProductCatalogRepository.holdGame`), the refreshes owed are written with the change, and
    /// carried out for up to `refreshWithin` before this returns (the rest by a service's worker).
    /// One transaction: the secret settings given commit with the rest, or nothing does.
    public func update(
        _ clientID: String, _ settings: ClientSettings,
        refreshWithin budget: Duration? = ProductCatalogRepository.interactiveRefreshBudget
    ) async throws -> Client {
        let changesGame = settings.gameID != nil, reshapes = settings.gameID != nil || settings.environments != nil
        let secrets = secrets
        let (client, refreshes) = try await pool.withTransaction { connection -> (Client, [CatalogRefreshes.Request]) in
            // First, holding nothing yet: claims in flight of the game finish before the change.
            let held =
                reshapes
                ? try ProductCatalogRepository.holdGame(
                    of: clientID,
                    alsoScopes: changesGame
                        ? [ClientInfo.scope(clientID: clientID, gameID: settings.gameID ?? nil)] : [],
                    on: connection) : []
            // With the rest of the change: all of it commits, or none.
            if !settings.sealedSettings.isEmpty {
                try Self.updateSealed(clientID, settings.sealedSettings, secrets: secrets, on: connection)
            }
            // COALESCE keeps what was not given; the *_set flags let an explicit null clear a field.
            let rows = try connection.query(
                """
                UPDATE clients SET
                    name = COALESCE(\(settings.name), name),
                    game_id = CASE WHEN \(settings.gameID != nil) THEN \(settings.gameID ?? nil)::bigint ELSE game_id END,
                    app_identifiers = jsonb_strip_nulls(app_identifiers || \(try Self.json(settings.appIdentifiers))::jsonb),
                    environments = COALESCE(\(settings.environments?.map(\.rawValue))::text[], environments),
                    refund_callback_url = CASE WHEN \(settings.refundCallbackURL != nil) THEN \(settings.refundCallbackURL ?? nil) ELSE refund_callback_url END,
                    refund_callback_format = COALESCE(\(settings.refundCallbackFormat), refund_callback_format),
                    webhook_url = CASE WHEN \(settings.webhookURL != nil) THEN \(settings.webhookURL ?? nil) ELSE webhook_url END,
                    delivery_url = CASE WHEN \(settings.deliveryURL != nil) THEN \(settings.deliveryURL ?? nil) ELSE delivery_url END,
                    settings = jsonb_strip_nulls(settings || \(try Self.json(settings.settings))::jsonb),
                    updated_at = now()
                WHERE id = \(clientID)
                RETURNING \(unescaped: Self.columns)
                """)
            guard let row = rows.first else { throw ClientStoreError.notFound(clientID) }
            let client = try Self.decode(row)
            guard reshapes else { return (client, []) }
            // The other clients of both games: which claims change what a player owns changed for them too.
            if changesGame { try ProductCatalogRepository.touch(held.filter { $0 != clientID }, on: connection) }
            return (client, try CatalogRefreshes.requestAll(clients: changesGame ? held : [clientID], on: connection))
        }
        await CatalogRefresher(pool: pool).refreshNow(refreshes, within: budget)
        return client
    }

    /// Issues a new secret; the old one, and every token issued before, stop working at once.
    public func rotateSecret(_ clientID: String) async throws -> String {
        let secret = Self.newSecret()
        let box = try secrets.seal(secret, owner: clientID)
        let updated = try await pool.execute(
            """
            UPDATE clients SET secret_ciphertext = \(box), secret_rotated_at = clock_timestamp(), updated_at = now() WHERE id = \(clientID)
            """)
        guard updated == 1 else { throw ClientStoreError.notFound(clientID) }
        return secret
    }

    public func disable(_ clientID: String) async throws -> Client {
        let rows = try await pool.query(
            """
            UPDATE clients SET disabled_at = COALESCE(disabled_at, now()), updated_at = now() WHERE id = \(clientID)
            RETURNING \(unescaped: Self.columns)
            """)
        guard let row = rows.first else { throw ClientStoreError.notFound(clientID) }
        return try Self.decode(row)
    }

    /// The plaintext secret, to verify or produce an HMAC signature. Nil for an unknown or
    /// disabled client.
    public func secret(for clientID: String) async throws -> (client: Client, secret: String)? {
        let rows = try await pool.query(
            "SELECT \(unescaped: Self.columns), secret_ciphertext FROM clients WHERE id = \(clientID)")
        guard let row = rows.first else { return nil }
        let client = try Self.decode(row)
        guard !client.disabled else { return nil }
        return (client, try secrets.open(try row.decode("secret_ciphertext", as: Data.self), owner: clientID))
    }

    /// The client's secret plugin settings whose names start with `prefix` (opened on demand).
    public func sealedSettings(of clientID: String, prefix: String = "") async throws -> [String: String] {
        let rows = try await pool.query("SELECT sealed_settings FROM clients WHERE id = \(clientID)")
        guard let box = try rows.first?.decode("sealed_settings", as: Data?.self) else { return [:] }
        return try Self.open(box, clientID: clientID, secrets: secrets).filter { $0.key.hasPrefix(prefix) }
    }

    /// Read, merge and reseal under a row lock (in the caller's transaction), so two updates do not
    /// lose each other's keys.
    private static func updateSealed(
        _ clientID: String, _ changes: [String: String?], secrets: SecretBox, on connection: PostgresConnection
    ) throws {
        let rows = try connection.query("SELECT sealed_settings FROM clients WHERE id = \(clientID) FOR UPDATE")
        guard let row = rows.first else { throw ClientStoreError.notFound(clientID) }
        var current =
            try row.decode("sealed_settings", as: Data?.self).map {
                try Self.open($0, clientID: clientID, secrets: secrets)
            } ?? [:]
        for (name, value) in changes { current[name] = value }
        let box = try Self.seal(current, clientID: clientID, secrets: secrets)
        try connection.execute("UPDATE clients SET sealed_settings = \(box), updated_at = now() WHERE id = \(clientID)")
    }

    /// Sealed settings are bound to `<client id>:settings`, so they cannot stand in for the client secret.
    private static func seal(_ values: [String: String], clientID: String, secrets: SecretBox) throws -> Data? {
        guard !values.isEmpty else { return nil }
        return try secrets.seal(
            String(decoding: try JSONEncoder().encode(values), as: UTF8.self), owner: "\(clientID):settings")
    }

    private static func open(_ box: Data, clientID: String, secrets: SecretBox) throws -> [String: String] {
        try JSONDecoder().decode(
            [String: String].self, from: Data(try secrets.open(box, owner: "\(clientID):settings").utf8))
    }

    static func json(_ settings: [String: [String]?]) throws -> String {
        String(decoding: try JSONEncoder().encode(settings), as: UTF8.self)
    }

    /// Every app of one kind and every environment some enabled client registered.
    func registeredApps(_ kind: AppIdentifierKind) async throws -> RegisteredApps {
        let rows = try await pool.query(
            """
            SELECT ARRAY(SELECT jsonb_array_elements_text(CASE WHEN jsonb_typeof(app_identifiers -> \(kind.name)) = 'array'
                                                         THEN app_identifiers -> \(kind.name) ELSE '[]' END)) AS apps, environments
            FROM clients WHERE disabled_at IS NULL
            """)
        var apps = RegisteredApps()
        for row in rows {
            apps.appIdentifiers.formUnion(try row.decode("apps", as: [String].self))
            apps.environments.formUnion(
                try row.decode("environments", as: [String].self).compactMap(StoreEnvironment.init(rawValue:)))
        }
        return apps
    }

    /// The client a store event belongs to: the one that recorded the transaction, else the
    /// oldest enabled client that registered the app; either way one that accepts the event's
    /// environment.
    static func owner(
        of purchase: VerifiedPurchase, appIdentifier: String?, kind: AppIdentifierKind?, clientID: String? = nil,
        on connection: PostgresConnection
    ) throws -> Client? {
        // The client that recorded the transaction owns it, else the oldest client that registered
        // the app. A notification that is one client's (a store whose endpoints are per client)
        // moves only that client's rows: signed with its secret, it says nothing of another's.
        let rows = try connection.query(
            """
            WITH recorder AS (SELECT client_id FROM transactions WHERE store = \(purchase.store.rawValue)
                              AND environment = \(purchase.environment.rawValue) AND transaction_id = \(purchase.transactionID))
            SELECT \(unescaped: columns) FROM clients
            WHERE ((\(clientID != nil) AND disabled_at IS NULL AND id = \(clientID ?? "")
                    AND COALESCE((SELECT client_id FROM recorder), id) = id)
                OR (\(clientID == nil) AND (id = (SELECT client_id FROM recorder)
                    OR (disabled_at IS NULL AND app_identifiers -> \(kind?.name ?? "") ? \(appIdentifier ?? "")))))
              -- A store event reaches only a client that accepts its environment: a sandbox refund
              -- never touches a production-only client.
              AND \(purchase.environment.rawValue) = ANY (environments)
            ORDER BY id = (SELECT client_id FROM recorder) DESC NULLS LAST, created_at
            LIMIT 1
            """)
        return try rows.first.map(decode)
    }

    /// 32 random bytes, base64url: 43 characters, safe in headers and shells.
    static func newSecret() -> String { "rgs_" + Base64.urlEncode(SecureRandom.bytes(32)) }

    static let columns = """
        clients.id, name, game_id, app_identifiers::text AS app_identifiers, environments, refund_callback_url, refund_callback_format, webhook_url,
        delivery_url, settings::text AS settings, sealed_settings IS NOT NULL AS has_sealed, disabled_at IS NOT NULL AS disabled, created_at,
        secret_rotated_at, \(gameCatalogColumn)
        """

    /// The products (`store/product_id`) some catalog of the client's game maps (all of a product
    /// or one of its purchase options).
    static let gameCatalogColumn = """
        ARRAY(SELECT DISTINCT pe.store || '/' || \(EntitlementRules.catalogProductSQL(entry: "pe.product_id")) FROM product_entitlements pe JOIN clients g ON g.id = pe.client_id
              WHERE g.id = clients.id OR (g.game_id IS NOT NULL AND g.game_id = clients.game_id)) AS game_catalog
        """

    static func decode(_ row: PostgresRow) throws -> Client {
        Client(
            clientID: try row.decode("id"), name: try row.decode("name"), gameID: try row.decode("game_id"),
            appIdentifiers: try JSONDecoder().decode(
                [String: [String]].self, from: Data(try row.decode("app_identifiers", as: String.self).utf8)),
            environments: try row.decode("environments", as: [String].self).compactMap(
                StoreEnvironment.init(rawValue:)),
            refundCallbackURL: try row.decode("refund_callback_url"),
            refundCallbackFormat: try row.decode("refund_callback_format"),
            webhookURL: try row.decode("webhook_url"), deliveryURL: try row.decode("delivery_url"),
            settings: try JSONDecoder().decode(
                [String: [String]].self, from: Data(try row.decode("settings", as: String.self).utf8)),
            hasSealedSettings: try row.decode("has_sealed"), disabled: try row.decode("disabled"),
            createdAt: try row.decode("created_at"),
            secretRotatedAt: try row.decode("secret_rotated_at"),
            gameCatalog: Set(try row.decode("game_catalog", as: [String].self)))
    }
}
