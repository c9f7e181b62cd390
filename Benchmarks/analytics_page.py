#!/usr/bin/env python3
"""How long the console's analytics page takes on a big ledger: one stack, filled straight into its
database (generate_series, server-side) with `--purchases` transactions over the past year (three
stores, two currencies, one in 50 refunded, one in 20 a subscription period, one in 100 never
claimed) and twice as many verification attempts, then VACUUM ANALYZE; then signs in to the console
and times each range of the page, and the overview, `--rounds` times each.

    python3 Benchmarks/analytics_page.py [--binary .build/release/receiptgate] [--purchases 10000000] [--rounds 5]
        [--time-migration]

Prints the fill's duration per table, then one line per page: the median and the slowest time to
the last byte. The figure in docs/benchmarks.md comes from this script.
"""
import argparse, http.cookiejar, re, statistics, subprocess, sys, time, urllib.parse, urllib.request

from bench_stack import Stack

ADMIN_TOKEN = "analytics-benchmark-admin-token-0123456789"


def fill(stack, purchases):
    client = stack.client["client_id"]
    steps = [
        ("transactions", f"""
            INSERT INTO transactions (store, environment, transaction_id, original_transaction_id, product_id, product_kind, quantity,
                price_milliunits, currency, storefront, purchase_date, revocation_date, state, client_id, player_id,
                first_verified_at, updated_at, claimed_at)
            SELECT (ARRAY['app_store', 'google_play', 'stripe'])[1 + g % 3], 'production', (4000000000000000 + g)::text,
                   CASE WHEN g % 20 = 0 THEN (4000000000000000 + g - g % 1000)::text ELSE (4000000000000000 + g)::text END,
                   CASE WHEN g % 20 = 0 THEN 'vip.monthly' ELSE 'gems.' || (g % 7) END,
                   CASE WHEN g % 20 = 0 THEN 'auto_renewable_subscription' ELSE 'consumable' END, 1,
                   990 + (g % 5) * 1000, CASE WHEN g % 4 = 0 THEN 'EUR' ELSE 'USD' END, 'USA', t,
                   CASE WHEN g % 50 = 0 THEN t + interval '3 days' END, CASE WHEN g % 50 = 0 THEN 'refunded' ELSE 'active' END,
                   '{client}', 'player-' || (g % {max(1, purchases // 100)}), t, t, CASE WHEN g % 100 = 1 THEN NULL ELSE t END
            FROM generate_series(1, {purchases}) g, LATERAL (SELECT now() - interval '365 days' + g * (interval '365 days' / {purchases})) AS x(t)
            """),
        ("verification_attempts", f"""
            INSERT INTO verification_attempts (client_id, store, outcome, duplicate, error_code, error_reason, created_at)
            SELECT '{client}', 'app_store', CASE WHEN g % 25 = 0 THEN 'failed' ELSE 'verified' END, g % 2 = 0,
                   CASE WHEN g % 25 = 0 THEN 'INVALID_RECEIPT' END, CASE WHEN g % 25 = 0 THEN 'SIGNATURE_INVALID' END,
                   now() - interval '365 days' + g * (interval '365 days' / {2 * purchases})
            FROM generate_series(1, {2 * purchases}) g
            """),
        ("subscriptions", f"""
            INSERT INTO subscriptions (store, environment, original_transaction_id, product_id, status, expires_date, client_id)
            SELECT 'app_store', 'production', (4000000000000000 + g * 1000)::text, 'vip.monthly',
                   CASE WHEN g % 3 = 0 THEN 'expired' WHEN g % 7 = 0 THEN 'grace_period' ELSE 'active' END,
                   now() + (g % 60 - 30) * interval '1 day', '{client}'
            FROM generate_series(1, {max(1, purchases // 1000)}) g
            """),
    ]
    for table, sql in steps:
        t0 = time.time()
        stack.psql(sql)
        print(f"filled {table} in {time.time() - t0:.0f} s", flush=True)
    t0 = time.time()
    stack.psql("VACUUM ANALYZE")
    print(f"vacuum analyze in {time.time() - t0:.0f} s", flush=True)


def time_migration(stack):
    """Undoes migration 35 (the roll-up, its triggers, the disputes index) and times applying it."""
    stack.psql("""
        DO $$ DECLARE f text; BEGIN
            FOR f IN SELECT proname FROM pg_proc WHERE proname ~ '^(ledger|attempt)_days_' LOOP
                EXECUTE format('DROP FUNCTION %I() CASCADE', f);
            END LOOP;
        END $$;
        DROP TABLE ledger_days, attempt_days; DROP INDEX outbox_disputes, transactions_refunded_recently; DELETE FROM schema_migrations WHERE version = 35;
        """)
    t0 = time.time()
    subprocess.run([stack.binary, "migrate"], env=stack.env, check=True, capture_output=True)
    print(f"migration 35 (roll-up filled from the ledger) in {time.time() - t0:.0f} s", flush=True)
    stack.psql("VACUUM ANALYZE ledger_days")
    stack.psql("VACUUM ANALYZE attempt_days")


def signed_in(base):
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base + "/console/sign-in").read().decode()
    csrf = re.search(r'name="csrf" value="([^"]*)"', page).group(1)
    opener.open(base + "/console/sign-in", data=urllib.parse.urlencode({"token": ADMIN_TOKEN, "csrf": csrf}).encode()).read()
    return opener


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", default=".build/release/receiptgate")
    parser.add_argument("--purchases", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--time-migration", action="store_true")
    args = parser.parse_args()
    stack = Stack(args.binary, label="analytics", env={"RECEIPTGATE_ADMIN_TOKEN": ADMIN_TOKEN}).start()
    try:
        fill(stack, args.purchases)
        if args.time_migration:
            time_migration(stack)
        base = f"http://127.0.0.1:{stack.port}"
        opener = signed_in(base)
        for path in ["/console/analytics?range=90", "/console/analytics?range=30", "/console/analytics?range=7",
                     "/console/analytics?range=today", "/console"]:
            times = []
            for _ in range(args.rounds):
                t0 = time.perf_counter()
                body = opener.open(base + path).read()
                times.append(time.perf_counter() - t0)
                if b"<h1>" not in body or b"sign-in" in body[:2000] and b"Sign out" not in body:
                    sys.exit(f"{path} did not answer a signed-in page")
            print(f"{path}: median {statistics.median(times) * 1000:.0f} ms, slowest {max(times) * 1000:.0f} ms "
                  f"({args.rounds} rounds, {args.purchases} transactions)", flush=True)
    finally:
        stack.stop()


if __name__ == "__main__":
    main()
