enum HelpText {
    static let main = """
        receiptgate — self-hosted in-app purchase verification

        Usage: receiptgate <command> [options]

        Commands:
          serve            Run the HTTP service (starts the embedded database if DATABASE_URL is unset)
          migrate          Apply pending database migrations and exit
          version          Print the version
          client <action>  Manage API clients: create, list, show, update, rotate-secret, disable
          webhooks <action>  See and redeliver webhook events: list [--failed], redeliver EVENT_ID
          keys rotate      Make a new OpenID token signing key (the old one stays published until its tokens expire)
          dev purchase     Sign a test StoreKit 2 purchase for trying the service out (never accepted with Apple's root)

        Configuration comes from environment variables (see docs/configuration.md). Run
        `receiptgate <command> --help` for a command's options.
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

    static let version = """
        Usage: receiptgate version

        Prints the version.
        """

    static let client = """
        Usage: receiptgate client <action> [options]

        Actions:
          create --name NAME [settings]     Register a client; prints its client_id and client_secret (shown once)
          list                              Print every client (never secrets)
          show CLIENT_ID                    Print one client (never its secret)
          update CLIENT_ID [settings]       Change settings; an empty value clears a URL or the game id
          rotate-secret CLIENT_ID           Issue a new secret (shown once); the old one stops working at once
          disable CLIENT_ID                 Refuse every further request from this client

        Settings:
          --name NAME
          --game-id N                       integer game id
          --bundle-id ID                    App Store bundle id; repeat for several
          --package-name NAME               Google Play package name; repeat for several
          --environments LIST               production, sandbox or production,sandbox (default: production;
                                            production,sandbox on create with --app-id: Hive answers test purchases "Y")
          --refund-callback-url URL         http(s) URL told about refunds
          --refund-callback-format NAME     shape of refund callbacks (default alogame, the only one today)
          --webhook-url URL                 http(s) URL that receives webhook events
          --allow-insecure-url              outbound URLs may be plain http:// (default: https only)
          --account-mismatch flag|reject    a purchase made for another account token: recorded and reported
                                            but never delivered (flag, default), or refused 422 (reject)
          --delivery-url URL                http(s) URL that receives entitlement deliveries (server-authoritative delivery)
          --app-id ID                       Hive Axyl app id accepted as X-App-Id; repeat for several (--app-id "" clears)
          --google-service-account-key PATH Google service-account JSON key for this client's apps (stored sealed, never shown)
          --google-license-key BASE64       Play licensing public key: purchase JSON signatures are checked locally too
          --google-acknowledge on|off       acknowledge Google Play purchases after recording them (default on)
          --google-consume on|off           consume one-time products instead of acknowledging them (default off)

        Output is one JSON object on stdout.
        """

    static let keys = """
        Usage: receiptgate keys rotate

        Makes a new ES256 key current for signing OpenID access tokens (AccountLink). The previous
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

    static let clientCreate = "Usage: receiptgate client create --name NAME [--game-id N] [--bundle-id ID]... [--package-name NAME]...\n"
        + "       [--environments production,sandbox] [--refund-callback-url URL] [--webhook-url URL]\n\n"
        + "Registers a client and prints {\"client_id\", \"client_secret\", ...}. The secret is shown only this once."
    static let clientUpdate = "Usage: receiptgate client update CLIENT_ID [--name NAME] [--game-id N] [--bundle-id ID]...\n"
        + "       [--package-name NAME]... [--environments LIST] [--refund-callback-url URL] [--webhook-url URL]\n\n"
        + "Changes only the settings given. Repeated options replace the whole list; an empty URL or game id clears it."
    static let clientList = "Usage: receiptgate client list\n\nPrints {\"clients\": [...]}, without secrets."
    static let clientShow = "Usage: receiptgate client show CLIENT_ID\n\nPrints one client, without its secret."
    static let clientRotate = "Usage: receiptgate client rotate-secret CLIENT_ID\n\nIssues a new secret, shown once; the old one stops working at once."
    static let clientDisable = "Usage: receiptgate client disable CLIENT_ID\n\nDisables the client: its requests are refused from now on."

    static let dev = """
        Usage: receiptgate dev purchase --bundle-id ID --product-id ID [options]

        Development helpers for trying ReceiptGate out without a device or an Apple account.
        See `receiptgate dev purchase --help`.
        """

    static let devPurchase = """
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
