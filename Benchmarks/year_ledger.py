#!/usr/bin/env python3
"""What a year of a big game's ledger costs a purchase: the same build, one stack on an empty ledger
and one on a filled one, alternating runs of fresh verifications for a client with a webhook URL.

    python3 Benchmarks/year_ledger.py [--binary .build/release/receiptgate] [--purchases 10000000]
                                      [--rounds 2] [--duration 15] [--requests 100000] [--retention]
                                      [--expired-grants] [--why-waiting]

The filled stack gets, straight into its database (generate_series, server-side), what a year of a
big game leaves: `--purchases` transactions (claimed by 1 % as many players, over the past year),
twice as many verification attempts, one delivered webhook each, a raw notification for one in 50
(about 15 KB each, like the App Store's with its certificate chain) and a current entitlement row
for one in 10; then VACUUM ANALYZE. Each run prints requests a second, p99, CPU ms a request (service and
Postgres), the WAL Postgres wrote a purchase and the webhooks' line (webhook_path.py's `describe`);
the end, each stack's medians and the ratios.
The receiver answering the webhooks is webhook_path.py's.
"""
import argparse, os, statistics, subprocess, sys, time

from bench_stack import TUNED_PG_OPTIONS, Stack
from webhook_path import Receiver, describe, one_run as webhook_run


def fill(stack, purchases, expired_grants=False):
    client = stack.client["client_id"]
    players = max(1, purchases // 100)
    started = time.time()
    steps = [
        ("transactions", f"""
            INSERT INTO transactions (store, environment, transaction_id, original_transaction_id, product_id, product_kind, quantity,
                price_milliunits, currency, storefront, app_identifier, purchase_date, ownership, state, client_id, player_id,
                first_verified_at, updated_at, claimed_at)
            SELECT 'app_store', 'production', (4000000000000000 + g)::text, (4000000000000000 + g)::text,
                   CASE WHEN g % 20 = 0 THEN 'vip.monthly' ELSE 'gems.100' END,
                   CASE WHEN g % 20 = 0 THEN 'auto_renewable_subscription' ELSE 'consumable' END, 1, 990, 'USD', 'USA',
                   'vn.example.iapbench', t, 'purchased', 'active', '{client}', 'player-' || (g % {players}), t, t, t
            FROM generate_series(1, {purchases}) g, LATERAL (SELECT now() - interval '365 days' + g * (interval '365 days' / {purchases})) AS x(t)
            """),
        ("verification_attempts", f"""
            INSERT INTO verification_attempts (client_id, store, request_id, outcome, transaction_row_id, duplicate, player_id, evidence_sha256,
                created_at)
            SELECT '{client}', 'app_store', md5(g::text), 'verified', NULL, g % 2 = 0, 'player-' || (g % {players}), md5((g * 7)::text),
                   now() - interval '365 days' + g * (interval '365 days' / {2 * purchases})
            FROM generate_series(1, {2 * purchases}) g
            """),
        ("outbox", f"""
            INSERT INTO outbox (event_id, client_id, event_type, aggregate_key, status, attempts, next_attempt_at, created_at,
                delivered_at, target)
            SELECT gen_random_uuid(), '{client}', 'transaction.verified', 'app_store:' || (4000000000000000 + g),
                   'delivered', 1, t, t, t, 'webhook'
            FROM generate_series(1, {purchases}) g, LATERAL (SELECT now() - interval '365 days' + g * (interval '365 days' / {purchases})) AS x(t)
            """),
        # A webhook's body is kept apart from its row, as the service writes it.
        ("outbox_bodies", """
            INSERT INTO outbox_bodies (id, body)
            SELECT id, jsonb_build_object('event_id', event_id, 'type', 'transaction.verified', 'data',
                                          jsonb_build_object('transaction', jsonb_build_object('transaction_id', substr(aggregate_key, 11),
                                                             'product_id', 'gems.100', 'price_milliunits', 990, 'currency', 'USD', 'state', 'active')))::text
            FROM outbox
            """),
        ("store_notifications", f"""
            INSERT INTO store_notifications (store, notification_id, notification_type, environment, app_identifier, transaction_id,
                original_transaction_id, product_id, raw_body, decoded, received_at, processed_at)
            SELECT 'app_store', md5(g::text), 'DID_RENEW', 'production', 'vn.example.iapbench', (4000000000000000 + g * 50)::text,
                   (4000000000000000 + g * 50)::text, 'vip.monthly',
                   -- 14.7 KB that compresses no better than a real signed payload does
                   convert_to((SELECT string_agg(md5(g::text || '.' || i::text), '') FROM generate_series(1, 460) i), 'UTF8'),
                   jsonb_build_object('notificationType', 'DID_RENEW'), t, t
            FROM generate_series(1, {purchases // 50}) g,
                 LATERAL (SELECT now() - interval '365 days' + g * (interval '365 days' / {max(1, purchases // 50)})) AS x(t)
            """),
    ]
    for table, sql in steps:
        t0 = time.time()
        stack.psql(sql)
        print(f"filled {table} in {time.time() - t0:.0f} s", flush=True)
    t0 = time.time()
    # Every grant still current, as the expiry sweep (every 30 s) leaves a ledger. Grants filled
    # already expired (most of a year's, `--expired-grants`) keep it busy for minutes during the
    # measured runs: a transaction and an entitlement.expired webhook a player.
    expires = "purchase_date + interval '30 days'" if expired_grants else "now() + (1 + (id / 5) % 30) * interval '1 day'"
    stack.psql(f"""
        INSERT INTO player_entitlements (client_id, player_id, entitlement, store, environment, product_id, transaction_row_id,
            transaction_id, original_transaction_id, purchase_date, expires_date, will_renew, ownership)
        SELECT client_id, player_id, 'e' || ((id / 5) % 20), store, environment, product_id, id, transaction_id, original_transaction_id, purchase_date,
               {expires}, true, ownership
        FROM transactions WHERE id % 5 = 0
        ON CONFLICT DO NOTHING
        """)
    print(f"filled player_entitlements in {time.time() - t0:.0f} s", flush=True)
    stack.psql("VACUUM ANALYZE")
    sizes = stack.psql("""
        SELECT relname, pg_size_pretty(pg_total_relation_size(relid)), pg_size_pretty(pg_indexes_size(relid)), n_live_tup
        FROM pg_stat_user_tables ORDER BY pg_total_relation_size(relid) DESC LIMIT 8
        """)
    for name, total, indexes, rows in sizes:
        print(f"  {name}: {total} ({indexes} indexes), {rows} rows")
    print(f"filled a year's ledger in {time.time() - started:.0f} s", flush=True)


def wal_lsn(stack):
    return int(stack.psql("SELECT pg_current_wal_lsn() - '0/0'")[0][0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=".build/release/receiptgate")
    ap.add_argument("--purchases", type=int, default=10_000_000)
    ap.add_argument("--rounds", type=int, default=2, help="rounds of A B B A")
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--outage", type=int, default=0)
    ap.add_argument("--tuned", action="store_true",
                    help="both clusters with the settings docs/operations.md recommends for a year's ledger "
                         "(what the embedded cluster picks on a machine with 16 GB or more)")
    ap.add_argument("--expired-grants", action="store_true",
                    help="entitlements expiring a month after their purchase, so most are expired when the runs start: the "
                         "expiry sweep works through them (an entitlement.expired webhook each) during the runs")
    ap.add_argument("--why-waiting", action="store_true",
                    help="print the messages left at each run's end, their timelines and the outbox's log lines (why_waiting.py)")
    ap.add_argument("--retention", action="store_true",
                    help="the default retention (its first sweep then removes most of the filled year while the runs are measured)")
    a = ap.parse_args()
    receiver = Receiver()
    client_args = ["--webhook-url", receiver.url, "--allow-insecure-url"]
    env = {"RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE": "on"}
    if not a.retention:
        # The whole year stays (as a ledger without retention would keep it), and no first sweep
        # deletes most of it while the runs are measured.
        env.update({"RECEIPTGATE_RETAIN_ATTEMPTS_DAYS": "0", "RECEIPTGATE_RETAIN_OUTBOX_DAYS": "0", "RECEIPTGATE_RETAIN_NOTIFICATIONS_DAYS": "0"})
    pg_options = TUNED_PG_OPTIONS if a.tuned else ""
    stacks = {"A": Stack(a.binary, label="empty", env=env, client_args=client_args, pg_options=pg_options),
              "B": Stack(a.binary, label="year", env=env, client_args=client_args, pg_options=pg_options)}
    measured = {"A": [], "B": []}
    try:
        for stack in stacks.values():
            stack.start()
        fill(stacks["B"], a.purchases, a.expired_grants)
        for stack in stacks.values():
            stack.warm_up(a.connections)
        run_no = 0
        for _ in range(a.rounds):
            for name in "ABBA":
                run_no += 1
                stack = stacks[name]
                before, rows_before = wal_lsn(stack), int(stack.psql("SELECT count(*) FROM transactions")[0][0])
                r = webhook_run(stack, a, run_no, receiver)
                made = int(stack.psql("SELECT count(*) FROM transactions")[0][0]) - rows_before
                r["wal_kb_per_purchase"] = (wal_lsn(stack) - before) / 1024 / max(1, made)
                measured[name].append(r)
                cpu = r["cpu_ms_per_req"]
                print(f"{stack.label:6} run {run_no:2}: {r['rps']:8.1f} req/s  p99 {r['p99_ms']:.2f} ms  service {cpu.get('serve')} ms  "
                      f"postgres {cpu.get('postmaster')} ms  WAL {r['wal_kb_per_purchase']:.1f} KB a purchase  {describe(r)}",
                      flush=True)
        med = {name: {key: statistics.median(r[key] if key in r else r["cpu_ms_per_req"][key] for r in runs)
                      for key in ("rps", "p99_ms", "serve", "postmaster", "wal_kb_per_purchase", "webhooks_per_s")}
               for name, runs in measured.items()}
        for name in "AB":
            m = med[name]
            print(f"{stacks[name].label}: {m['rps']:.0f} req/s, p99 {m['p99_ms']:.1f} ms, CPU {m['serve']:.3f} + {m['postmaster']:.3f} ms, "
                  f"WAL {m['wal_kb_per_purchase']:.1f} KB a purchase, webhooks {m['webhooks_per_s']:.0f}/s")
        print(f"a year's ledger against an empty one: {med['B']['rps'] / med['A']['rps']:.2f}x the throughput, "
              f"{med['B']['wal_kb_per_purchase'] / med['A']['wal_kb_per_purchase']:.2f}x the WAL a purchase")
    finally:
        for stack in stacks.values():
            stack.stop()


if __name__ == "__main__":
    main()
