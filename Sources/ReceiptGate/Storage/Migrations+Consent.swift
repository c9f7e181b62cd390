import Postgres

extension Schema {
    static let consentMigrations: [Migration] = [
        // A store's id for the buyer's account in an app (`app_transaction_id`) names players two
        // ways: the purchases they claimed carry it, and an app ownership check keeps it with the
        // player it was asked for (`app_transaction_players`). A consent revocation names the
        // account, and the game is told every player found either way; each revocation is kept
        // per client it told (or, with no client, once), with the players found then, for the
        // console. Its notification stays in `store_notifications` (raw); `notification_id` is
        // the store's id there, not a reference, since retention may remove the notification's body.
        Migration(
            version: 32, name: "consent",
            sql: """
                CREATE INDEX transactions_app_transaction ON transactions (app_transaction_id)
                    WHERE app_transaction_id IS NOT NULL;
                CREATE TABLE app_transaction_players (
                    client_id text NOT NULL REFERENCES clients (id),
                    store text NOT NULL,
                    environment text NOT NULL,
                    app_transaction_id text NOT NULL,
                    player_id text NOT NULL,
                    first_seen_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (client_id, store, app_transaction_id, player_id)
                );
                CREATE TABLE consent_revocations (
                    id bigserial PRIMARY KEY,
                    store text NOT NULL,
                    notification_id text NOT NULL,
                    environment text,
                    app_identifier text,
                    client_id text REFERENCES clients (id),
                    app_transaction_id text,
                    player_ids text[] NOT NULL DEFAULT '{}',
                    webhook_queued boolean NOT NULL DEFAULT false,
                    revoked_at timestamptz,
                    received_at timestamptz NOT NULL DEFAULT now()
                );
                CREATE UNIQUE INDEX consent_revocations_once ON consent_revocations (store, notification_id, COALESCE(client_id, ''));
                CREATE INDEX consent_revocations_recent ON consent_revocations (received_at DESC, id DESC);
                """)
    ]
}
