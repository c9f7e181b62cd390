enum HelpText {
    static let main = """
        receiptgate — self-hosted in-app purchase verification

        Usage: receiptgate <command> [options]

        Commands:
          serve            Run the HTTP service (starts the embedded database if DATABASE_URL is unset)
          init             Create the data directory (embedded database, master key) if missing, migrate, and exit
          migrate          Apply pending database migrations and exit
          version          Print the version
          openapi          Print the OpenAPI document this binary serves at /openapi.yaml (core and plugins)
          client <action>  Manage API clients: create, list, show, update, rotate-secret, disable
          products <action>  A client's catalog of entitlements and prices: set, list, remove, price, prices
          webhooks <action>  See and redeliver webhook events: list [--failed], redeliver EVENT_ID
          notifications list  See what stores pushed, newest first: list [--store STORE] [--type TYPE]; raw ID
          reconcile        Read back now what a store keeps (history, quiet subscriptions): --store STORE [--since TIME]
          export transactions  The ledger's purchases and refunds as CSV: --since TIME --until TIME [--client ID]
          rates set        Load exchange rates for the console's analytics: --file rates.csv [--base USD]
          keys rotate      Make a new OpenID token signing key (the old one stays published until its tokens expire)
          dev <tool>       Development helpers the stores offer, e.g. signing a test purchase (see dev --help)

        Configuration comes from environment variables (see docs/configuration.md). Run
        `receiptgate <command> --help` for a command's options. Only serve and init create the data
        directory (RECEIPTGATE_DATA_DIR, default ./.receiptgate); every other command fails, naming
        where it looked, when it is missing.
        """

    static let initialize = """
        Usage: receiptgate init

        Makes what the service keeps under RECEIPTGATE_DATA_DIR (default ./.receiptgate) where it is
        missing: the embedded PostgreSQL cluster (unless DATABASE_URL is set) and the master key
        (unless RECEIPTGATE_MASTER_KEY is set); applies the migrations, then prints
        {"data_directory", "database", "master_key"}. Safe to run again: what exists is kept.
        """

    static let serve = """
        Usage: receiptgate serve

        Runs the HTTP service until SIGTERM or SIGINT, then finishes in-flight requests and exits.
        Listens on RECEIPTGATE_HOST:RECEIPTGATE_PORT (default 127.0.0.1:8080). With no DATABASE_URL,
        starts a private PostgreSQL cluster under RECEIPTGATE_DATA_DIR and stops it on exit.
        """

    static let migrate = """
        Usage: receiptgate migrate

        Applies pending migrations under an advisory lock and prints {"applied": [versions]}.
        """

    static let openAPI = """
        Usage: receiptgate openapi

        Prints the OpenAPI document the service serves at GET /openapi.yaml: the core's part
        (Deploy/openapi.yaml, or RECEIPTGATE_OPENAPI_PATH) with every registered plugin's part in place.
        """

    static let export = """
        Usage: receiptgate export transactions --since TIME --until TIME [--client CLIENT_ID]
                                               [--environment production|sandbox|all] > ledger.csv

        Writes the ledger's purchases and refunds of a range as CSV (RFC 4180) on standard output,
        read in batches from one snapshot, so any size streams without filling memory. TIME is an
        RFC 3339 time (2026-11-01T00:00:00Z) or a date (2026-11-01, its midnight UTC); --since is
        included, --until excluded. Default environment: production.

        A header line, then one row per purchase made in the range and one per refund made in it
        (a purchase refunded in the range gives two rows), oldest first. Columns: type (purchase or
        refund), date, store, environment, client_id, client_name, transaction_id,
        original_transaction_id, order_id, product_id, product_kind, quantity, player_id, amount
        (a decimal in the currency; a refund's is negative, its share of the price when partial),
        currency, storefront, state, purchase_date, refund_date. Times are RFC 3339 UTC. A text
        field a spreadsheet would read as a formula (starting with =, +, - or @) gets a leading '.
        """

    static let rates = """
        Usage: receiptgate rates set --file rates.csv [--base USD]

        Loads the exchange rates the console's analytics page adds up money in several currencies
        with, replacing every rate loaded before; nothing is fetched from outside. One rate a line:
        DATE,CURRENCY,RATE (2026-11-30,EUR,1.0842: from that day on, until the currency's next
        rate, one EUR is worth 1.0842 of the base currency, USD unless --base says). Blank lines,
        # comments and a date,currency,rate header are skipped. Prints {"base", "rates"}.
        """

    static let version = """
        Usage: receiptgate version

        Prints the version as JSON: {"version": "0.1.0"}.
        """

    static let client =
        clientActions + clientSettings + pluginSettingsHelp + "\nOutput is one JSON object on stdout.\n"

    /// The settings every client has, whatever the stores and dialects: `client --help`, `client
    /// create --help` and `client update --help` all list them.
    static let clientSettings = """
        Settings:
          --name NAME
          --game-id N                       integer game id
          --environments LIST               production, sandbox or production,sandbox (default: production, unless
                                            a plugin setting given on create implies both; see below)
          --refund-callback-url URL         http(s) URL told about refunds
          --refund-callback-format NAME     shape of refund callbacks (a dialect's name for it; default: the first
                                            dialect's that has one)
          --webhook-url URL                 http(s) URL that receives webhook events
          --webhook-batch N                 a webhook POST carries up to N events, {"events": [...]} (1 to 100;
                                            default 1: each event alone, as its own body)
          --allow-insecure-url              outbound URLs may be plain http:// (default: https only)
          --account-mismatch flag|reject    a purchase made for another account token: recorded and reported
                                            but never delivered (flag, default), or refused 422 (reject)
          --delivery-url URL                http(s) URL that receives entitlement deliveries (server-authoritative delivery)
          --consumption-consent             the game collects the customer's consent to share consumption data with the
                                            store when a refund is requested (default off: none is sent)
          --refund-decline-at PERCENT       a delivered purchase consumed at least this much is answered "decline" (default 50)
          --refund-otherwise PREFERENCE     grant, decline, prorated or neutral when no rule decides (default prorated)
          --sample-content                  the game offers a free sample or trial before purchase (told to the store)

        """

    static let clientActions = """
        Usage: receiptgate client <action> [options]

        Actions:
          create --name NAME [settings]     Register a client; prints its client_id and client_secret (shown once)
          list                              Print every client (never secrets)
          show CLIENT_ID                    Print one client (never its secret)
          update CLIENT_ID [settings]       Change settings; an empty value clears a URL or the game id
          rotate-secret CLIENT_ID           Issue a new secret (shown once); the old one stops working at once
          disable CLIENT_ID                 Refuse every further request from this client


        """

    static let keys = """
        Usage: receiptgate keys rotate

        Makes a new ES256 key current for signing OpenID access tokens (dialects that issue them). The previous
        key stays in /.well-known/jwks.json for RECEIPTGATE_ACCESS_TOKEN_SECONDS more (plus a
        minute), so tokens it signed keep verifying until they expire. Prints the kids.
        """

    static let webhooks = """
        Usage: receiptgate webhooks list [--failed]
               receiptgate webhooks redeliver EVENT_ID

        list        Prints {"events": [...]}, newest first (--failed: dead events and pending ones that failed)
        redeliver   Queues the event for delivery again now, whatever its state

        Events are delivered at least once, in order per transaction, signed like API requests,
        retried with back-off for three days; then they are kept as "dead" until redelivered.
        """

    static let notifications = """
        Usage: receiptgate notifications list [--store STORE] [--type TYPE]
               receiptgate notifications raw ID

        list        Prints {"notifications": [...]}, the 100 newest store notifications received, each with
                    what its store's provider decoded (--store: one store id; --type: one notification type)
        raw         Writes one notification's body as its store sent it, byte for byte (empty once
                    RECEIPTGATE_RETAIN_NOTIFICATIONS_DAYS removed it)

        A store that asks for its endpoint to be confirmed shows up here with what its console asks
        for (a token, a URL) in "decoded"; --type with the store's name for that message finds it.
        """

    static let products = """
        Usage: receiptgate products set --client CLIENT_ID --store STORE --product-id ID --entitlement NAME [--entitlement NAME ...]
               receiptgate products list --client CLIENT_ID
               receiptgate products remove --client CLIENT_ID --store STORE --product-id ID [--entitlement NAME]
               receiptgate products price --client CLIENT_ID --store STORE --product-id ID --currency CODE --price-milliunits N [--description TEXT]
               receiptgate products prices --client CLIENT_ID

        set      makes the product grant exactly the entitlements given (repeat --entitlement for several);
                 --product-id ID:OPTION maps only the purchases of one purchase option of the product
        list     prints {"products": [{"store", "product_id", "entitlements"}]}
        remove   removes the product's mapping, or only one of its entitlements; prints {"removed": true|false}
        price    sets the product's price of one in a currency (and the description the buyer is shown), for
                 orders the service starts (POST /v1/orders): a line that leaves them out takes them from here
        prices   prints {"prices": [{"store", "product_id", "currency", "price_milliunits", "description"}]}

        --product-id is the store's product id, or the SKU of an item of a purchase that sold several
        under one transaction: each such item grants its SKU's entitlements until it is refunded.
        Entitlement names are 1–64 lower-case letters, digits, '_', '.' or '-' (vip, no_ads,
        season_pass_3). The same entitlement may come from products of several stores. Every change
        is recorded in the audit log.
        """

    static let reconcile = """
        Usage: receiptgate reconcile --store STORE [--since 2026-11-01T00:00:00Z]

        Runs the store's reconciliation once, now, in this process, beside any running service: the
        record the store keeps of its notifications or refunds, from --since (default: where the
        schedule would start), then the read-back of subscriptions whose period ended with
        no news (RECEIPTGATE_RECONCILE_SUBSCRIPTIONS_BUDGET calls at most). What it finds is recorded
        once, with the webhooks a push would have sent; the schedule's own cursors are not moved.
        Prints {"runs": [...]}, each with what it read, found and changed; exits 1 if one failed.
        """

    static let clientCreate =
        "Usage: receiptgate client create --name NAME [--game-id N] [--environments production,sandbox]\n"
        + "       [--refund-callback-url URL] [--webhook-url URL] [plugin settings]\n\n"
        + "Registers a client and prints {\"client_id\", \"client_secret\", ...}. The secret is shown only this once.\n\n"
        + clientSettings + pluginSettingsHelp
    static let clientUpdate =
        "Usage: receiptgate client update CLIENT_ID [--name NAME] [--game-id N] [--environments LIST]\n"
        + "       [--refund-callback-url URL] [--webhook-url URL] [plugin settings]\n\n"
        + "Changes only the settings given. Repeated options replace the whole list; an empty value clears a setting.\n\n"
        + clientSettings + pluginSettingsHelp
    static let clientList = "Usage: receiptgate client list\n\nPrints {\"clients\": [...]}, without secrets."
    static let clientShow = "Usage: receiptgate client show CLIENT_ID\n\nPrints one client, without its secret."
    static let clientRotate =
        "Usage: receiptgate client rotate-secret CLIENT_ID\n\nIssues a new secret, shown once; the old one stops working at once."
    static let clientDisable =
        "Usage: receiptgate client disable CLIENT_ID\n\nDisables the client: its requests are refused from now on."
}
