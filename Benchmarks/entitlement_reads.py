#!/usr/bin/env python3
"""What one entitlement read costs, against what one verification costs, on one service in one run.

    python3 Benchmarks/entitlement_reads.py --binary .build/release/receiptgate --duration 15
    python3 Benchmarks/entitlement_reads.py --smoke --binary .build/debug/receiptgate \\
        --path '/v1/players/{player}/transactions?limit=50'

1. A throwaway stack (bench_stack.py): PostgreSQL 15 on a Unix socket, `receiptgate serve` on it trusting
   the test root of ../shared/bench/make_corpus.py seed 1 (rate limit native.client off, as
   side_by_side.py runs it), one client made with `receiptgate client create` (App Store bundle id and
   Google Play package name vn.example.iapbench).
2. The ledger filled with COPY: --players players holding --transactions transactions, all claimed in
   production by that client: mostly consumables, some non-consumables (each bought once by a player),
   some auto-renewable subscriptions (one row a period and one `subscriptions` row each, active or
   expired), a few one-time purchases refunded; 60 % of players on the App Store, the rest on Google Play,
   a few on both; purchases over the last two years, rows in purchase order; then VACUUM ANALYZE.
3. The catalog set with `receiptgate products set` (vip_monthly and vip_yearly -> vip + no_ads,
   season_pass, no_ads, starter_pack, chapter_2, on both stores), each call timed: where setting the
   catalog refreshes the entitlement index of every holder, this is how a filled ledger gets its index.
4. --requests GET requests over players drawn at random (--path, default the entitlements route),
   signed with signature version 2 and rendered just before the load (a read may be sent again inside
   the 300 s timestamp window, so wrk replays them: entitlement_reads.lua), a preflight (200 for two
   players, 401 for a bad signature), a --warmup, then `wrk -t2 -c64 -d<duration> --latency`. Any answer
   but 200, or any socket error, fails the run. CPU per read by process (service, Postgres), statements
   and commits per read (pg_stat_statements).
5. A short verify load on the same service (../shared/bench/e2e_load.py, fresh StoreKit 2 purchases,
   as side_by_side.py drives it) for the CPU per verify, then one line:
   `entitlement-reads: N reads/s p50 X ms p99 Y ms, cpu per read A ms (service B + postgres C),
    cpu per verify D ms, ratio A/D = R (budget <= 0.33)`
Stops everything it started and removes its folder, also on failure (--keep leaves the folder).
--smoke is a quick check of the script itself: 2,000 players, 20,000 transactions, short loads.

Needs: wrk and python3-cryptography (apt-get install -y wrk python3-cryptography), PostgreSQL 15
(initdb, pg_ctl, psql), ../shared/bench (or RECEIPTGATE_SHARED_BENCH). CPU per request is counted from
/proc, so it holds up on a shared machine far better than reads/s; the output says how much CPU other
processes took meanwhile.
"""
import argparse, hashlib, hmac, http.client, json, os, random, shutil, signal, subprocess, sys, time
from array import array
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_stack import BENCH, Stack  # noqa: E402  (puts ../shared/bench on sys.path)

try:
    import e2e_load  # noqa: E402  (the team's verify load: its CPU accounting is reused here)
except ImportError as error:
    sys.exit(f"cannot load {BENCH}/e2e_load.py ({error}): apt-get install -y python3-cryptography, "
             "and set RECEIPTGATE_SHARED_BENCH when ../shared/bench is elsewhere")

LUA = HERE / "entitlement_reads.lua"
DEFAULT_PATH = "/v1/players/{player}/entitlements"
APP = "vn.example.iapbench"
DAY = 86400
HISTORY_DAYS = 730
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()

# name: (product_kind, price in US milli-dollars, period in days, entitlements the catalog maps it to)
PRODUCTS = {
    "coins_100": ("consumable", 990, None, ()),
    "coins_550": ("consumable", 4990, None, ()),
    "coins_1200": ("consumable", 9990, None, ()),
    "gems_80": ("consumable", 1990, None, ()),
    "energy_refill": ("consumable", 490, None, ()),
    "no_ads": ("non_consumable", 2990, None, ("no_ads",)),
    "starter_pack": ("non_consumable", 1990, None, ("starter_pack",)),
    "chapter_2": ("non_consumable", 4990, None, ("chapter_2",)),
    "vip_monthly": ("auto_renewable_subscription", 9990, 30, ("vip", "no_ads")),
    "vip_yearly": ("auto_renewable_subscription", 79990, 365, ("vip", "no_ads")),
    "season_pass": ("auto_renewable_subscription", 4990, 30, ("season_pass",)),
}
CONSUMABLES = (["coins_100", "coins_550", "coins_1200", "gems_80", "energy_refill"], [40, 25, 10, 15, 10])
NON_CONSUMABLES = (["no_ads", "starter_pack", "chapter_2"], [50, 35, 15])
SUBSCRIPTIONS = (["vip_monthly", "vip_yearly", "season_pass"], [55, 15, 30])
# Chance that a purchase is a new subscription (about 5-6 periods each, so ~12 % of rows) or a
# non-consumable (~3 % of rows); the rest are consumables. Chance a subscription stops at a renewal.
P_SUBSCRIPTION, P_NON_CONSUMABLE = 0.022, 0.033
CHURN = {30: 0.15, 365: 0.45}
P_REFUND = {"consumable": 0.004, "non_consumable": 0.01}
# (App Store storefront, Google Play region, currency, units per US dollar, share of players)
STOREFRONTS = [("USA", "US", "USD", 1, 40), ("VNM", "VN", "VND", 25000, 20), ("DEU", "DE", "EUR", 0.92, 15),
               ("JPN", "JP", "JPY", 150, 15), ("BRA", "BR", "BRL", 5, 10)]

TX_COLUMNS = ("store", "environment", "transaction_id", "original_transaction_id", "order_id", "product_id",
              "product_kind", "quantity", "price_milliunits", "currency", "storefront", "app_identifier",
              "purchase_date", "expires_date", "revocation_date", "revocation_reason", "ownership", "state",
              "client_id", "game_id", "player_id", "first_verified_at", "updated_at", "claimed_at")
SUB_COLUMNS = ("store", "environment", "original_transaction_id", "product_id", "status", "expires_date",
               "auto_renew", "latest_transaction_id", "client_id", "updated_at")


def store_product_id(store, name):
    return f"{APP}.{name}" if store == "app_store" else name


def player_id(p):
    return f"player-{p:07d}"


def ts(t):
    return time.strftime("%Y-%m-%d %H:%M:%S+00", time.gmtime(t))


class Ledger:
    """Generates the ledger's rows (COPY text format) and remembers what the report needs."""

    def __init__(self, players, client_id, game_id, seed, now):
        self.rng, self.now, self.client_id, self.game_id = random.Random(seed), now, client_id, game_id
        rng = self.rng
        self.home = ["app_store" if rng.random() < 0.6 else "google_play" for _ in range(players)]
        shares = [s[4] for s in STOREFRONTS]
        self.front = rng.choices(range(len(STOREFRONTS)), weights=shares, k=players)
        spend, total = [], 0.0  # a few players buy most: log-normal spend
        for _ in range(players):
            total += rng.lognormvariate(0, 1.2)
            spend.append(total)
        self.spend = spend
        self.rows, self.subscriptions = [], []
        self.owned = set()                 # (player, name) of non-consumables bought
        self.holders = {}                  # (store, name) -> players holding it, for the catalog's report
        self.kinds = {"consumable": 0, "non_consumable": 0, "auto_renewable_subscription": 0}
        self.status = {"active": 0, "expired": 0}
        self.refunded = 0
        self.subscriber = None             # a player with an active VIP subscription, for the preflight
        self.serial = 0

    def new_id(self, store):
        # serial x a number coprime with 10 is a bijection mod 10^15: unique, random-looking ids
        self.serial += 1
        n = (self.serial * 618_033_988_749_897) % 10**15
        if store == "app_store":
            return str(2 * 10**15 + n)
        return f"GPA.33{n // 10**13 % 100:02d}-{n // 10**9 % 10**4:04d}-{n // 10**5 % 10**4:04d}-{n % 10**5:05d}"

    def store_of(self, p):
        home = self.home[p]
        if self.rng.random() < 0.03:  # a few play on both
            return "google_play" if home == "app_store" else "app_store"
        return home

    def row(self, p, store, name, tid, original, bought, expires=None, state="active", revoked=None, quantity=1):
        kind, usd_milli, _, _ = PRODUCTS[name]
        front, region, currency, rate, _ = STOREFRONTS[self.front[p]]
        claimed = bought + self.rng.uniform(1, 30)
        reason = None if revoked is None else ("refunded_other_reason" if store == "app_store" else "refunded")
        values = (store, "production", tid, original, tid if store == "google_play" else None,
                  store_product_id(store, name), kind, quantity, round(usd_milli * rate) * quantity, currency,
                  front if store == "app_store" else region, APP, ts(bought), expires and ts(expires),
                  revoked and ts(revoked), reason, "purchased", state, self.client_id, self.game_id, player_id(p),
                  ts(claimed), ts(max(claimed, revoked or 0)), ts(claimed))
        self.rows.append((bought, "\t".join(r"\N" if v is None else str(v) for v in values)))
        self.kinds[kind] += 1
        if state == "refunded":
            self.refunded += 1
        elif kind != "consumable":
            self.holders.setdefault((store, name), set()).add(p)

    def one_time(self, p, names):
        rng, store = self.rng, self.store_of(p)
        name = rng.choices(names[0], weights=names[1])[0]
        kind = PRODUCTS[name][0]
        if kind == "non_consumable":
            if (p, name) in self.owned:
                return self.one_time(p, CONSUMABLES)
            self.owned.add((p, name))
        bought = self.now - rng.uniform(60, HISTORY_DAYS * DAY)
        revoked = bought + rng.uniform(DAY, 20 * DAY) if rng.random() < P_REFUND[kind] else None
        if revoked and revoked > self.now:
            revoked = None
        tid = self.new_id(store)
        quantity = rng.choice((2, 3, 5)) if kind == "consumable" and rng.random() < 0.05 else 1
        self.row(p, store, name, tid, tid, bought, state="refunded" if revoked else "active", revoked=revoked,
                 quantity=quantity)
        return 1

    def subscription(self, p, room):
        rng, store = self.rng, self.store_of(p)
        name = rng.choices(SUBSCRIPTIONS[0], weights=SUBSCRIPTIONS[1])[0]
        period = PRODUCTS[name][2] * DAY
        start = self.now - rng.uniform(60, HISTORY_DAYS * DAY)
        reachable = int((self.now - start) // period) + 1  # the last of these covers now
        periods = 1
        while periods < min(reachable, room) and rng.random() > CHURN[period // DAY]:
            periods += 1
        first = self.new_id(store)
        tid = first
        for k in range(periods):
            if k:
                tid = f"{first}..{k - 1}" if store == "google_play" else self.new_id(store)
            bought = start + k * period
            expires = bought + period
            self.row(p, store, name, tid, first, bought, expires=expires, state="active" if expires > self.now else "expired")
        active = expires > self.now
        status = "active" if active else "expired"
        self.status[status] += 1
        auto_renew = "t" if active and rng.random() < 0.92 else "f"
        self.subscriptions.append("\t".join((store, "production", first, store_product_id(store, name), status, ts(expires),
                                            auto_renew, tid, self.client_id, ts(bought + 30))))
        if expires > self.now + DAY and name.startswith("vip") and self.subscriber is None:
            self.subscriber = p
        return periods

    def fill(self, transactions):
        players = len(self.home)
        for p in range(players):  # everyone in the ledger bought something
            self.one_time(p, CONSUMABLES)
        made, rng = players, self.rng
        while made < transactions:
            p = rng.choices(range(players), cum_weights=self.spend)[0]
            r = rng.random()
            if r < P_SUBSCRIPTION:
                made += self.subscription(p, transactions - made)
            elif r < P_SUBSCRIPTION + P_NON_CONSUMABLE:
                made += self.one_time(p, NON_CONSUMABLES)
            else:
                made += self.one_time(p, CONSUMABLES)
        self.rows.sort(key=lambda r: r[0])  # the ledger's ids follow purchase time, as recorded live

    def player_without_catalog_products(self):
        bought = set().union(*self.holders.values())
        return next((p for p in range(len(self.home)) if p not in bought), None)


def copy_in(db_url, table, columns, lines):
    """COPY lines (text format) into table through psql's standard input."""
    cmd = [psql_path(), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", db_url, "-c", f"COPY {table} ({', '.join(columns)}) FROM STDIN"]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        batch = []
        for line in lines:
            batch.append(line)
            if len(batch) == 10000:
                p.stdin.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            p.stdin.write("\n".join(batch) + "\n")
        p.stdin.close()
        err = p.stderr.read()
        if p.wait():
            sys.exit(f"COPY {table} failed: {err.strip()[:400]}")
    except BrokenPipeError:
        sys.exit(f"COPY {table} failed: {p.stderr.read().strip()[:400]}")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def psql_path():
    return shutil.which("psql") or "/usr/lib/postgresql/15/bin/psql"


def render(prefix, a, client, port, players, rng):
    """--requests signed GETs for random players: <prefix>.data (raw requests back to back) and
    <prefix>.idx ((offset, length) as two uint64 each), as entitlement_reads.lua reads them."""
    client_id, key, stamp = client["client_id"], client["client_secret"].encode(), str(int(time.time()))
    head = f"HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nX-Client-ID: {client_id}\r\nX-Timestamp: {stamp}\r\nX-Signature-Version: 2\r\n"
    signed_prefix = f"v2\n{client_id}\n{stamp}\nGET\n"
    idx, off = array("Q"), 0
    with open(f"{prefix}.data", "wb") as f:
        for _ in range(a.requests):
            target = a.path.format(player=player_id(rng.randrange(players)))
            sig = hmac.new(key, f"{signed_prefix}{target}\n{EMPTY_SHA256}".encode(), hashlib.sha256).hexdigest()
            req = f"GET {target} {head}X-Signature: {sig}\r\n\r\n".encode()
            f.write(req)
            idx.extend((off, len(req)))
            off += len(req)
    assert sys.byteorder == "little"
    with open(f"{prefix}.idx", "wb") as f:
        idx.tofile(f)
    return int(stamp)


def signed_get(port, client, target, secret=None):
    stamp = str(int(time.time()))
    message = f"v2\n{client['client_id']}\n{stamp}\nGET\n{target}\n{EMPTY_SHA256}".encode()
    sig = hmac.new((secret or client["client_secret"]).encode(), message, hashlib.sha256).hexdigest()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", target, headers={"X-Client-ID": client["client_id"], "X-Timestamp": stamp, "X-Signature": sig,
                                          "X-Signature-Version": "2"})
        r = c.getresponse()
        return r.status, r.read().decode(errors="replace")
    finally:
        c.close()


def preflight(a, stack, ledger):
    """200 for a VIP subscriber and for a player holding no catalog product, 401 for a wrong secret. On the
    entitlements route the first must name vip and the second none of the catalog's entitlements: reads
    of an index that was never built would be cheap and tell nothing."""
    names = sorted({e for _, _, _, granted in PRODUCTS.values() for e in granted})
    players = (("an active VIP subscriber", ledger.subscriber, ["vip"], []),
               ("a player with no catalog product", ledger.player_without_catalog_products(), [], names))
    for who, p, must, must_not in players:
        if p is None:
            continue
        target = a.path.format(player=player_id(p))
        status, body = signed_get(stack.port, stack.client, target)
        if status != 200:
            hint = ("; this binary may not serve the route yet (the transactions route works on main: "
                    "--path '/v1/players/{player}/transactions?limit=50')") if status == 404 else ""
            sys.exit(f"preflight: GET {target} ({who}) answered {status}: {body[:300]}{hint}")
        print(f"  preflight: GET {target} ({who}) -> 200 {shorten(body)}", flush=True)
        if a.path == DEFAULT_PATH:
            missing = [e for e in must if f'"{e}"' not in body]
            extra = [e for e in must_not if f'"{e}"' in body]
            if missing or extra:
                sys.exit(f"preflight: {who} should hold {must or 'nothing'} of {names}; the answer lacks {missing} "
                         f"and names {extra}: is the entitlement index built when the catalog is set?")
    status, body = signed_get(stack.port, stack.client, a.path.format(player=player_id(0)), secret="rgs_not-the-secret")
    if status != 401:
        sys.exit(f"preflight: a request signed with the wrong secret answered {status}, want 401: {body[:200]}")
    print("  preflight: wrong secret -> 401", flush=True)


def shorten(body, limit=240):
    body = " ".join(body.split())
    return body if len(body) <= limit else body[:limit] + f"... ({len(body)} bytes)"


def run_wrk(a, stack, prefix, duration):
    """One wrk run over the rendered requests: its result, its own output and the CPU split."""
    cmd = ["wrk", f"-t{a.threads}", f"-c{a.connections}", f"-d{duration}s", "--latency", "--timeout", "10s",
           "-s", str(LUA), f"http://127.0.0.1:{stack.port}/", "--", prefix, str(a.threads)]
    t0, busy0, w0 = e2e_load.proc_table(), e2e_load.machine_busy(), time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out = p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if p.returncode is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    t1, busy1, elapsed = e2e_load.proc_table(), e2e_load.machine_busy(), time.time() - w0
    if p.returncode != 0 or "READS_RESULT " not in out:
        sys.exit(f"wrk failed (exit {p.returncode}):\n{out[-2000:]}")
    result = json.loads(out.split("READS_RESULT ", 1)[1].splitlines()[0])
    pidfiles = [stack.pidfile, os.path.join(stack.pgdata, "postmaster.pid")]
    cpu, foreign_top, _ = e2e_load.cpu_split(t0, t1, busy1 - busy0, usage.ru_utime + usage.ru_stime, pidfiles, elapsed)
    return result, out, cpu, foreign_top, elapsed


def run_group(cmd, **kw):
    """Runs cmd in a process group of its own, which is killed whole if this script stops first."""
    p = subprocess.Popen(cmd, start_new_session=True, **kw)
    try:
        return p.wait()
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def statement_counts(stack):
    calls, exec_ms = stack.psql("SELECT coalesce(sum(calls), 0), coalesce(sum(total_exec_time), 0) FROM pg_stat_statements "
                                "WHERE query NOT ILIKE '%pg_stat_%'")[0]
    commits = stack.psql("SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")[0][0]
    return int(calls), float(exec_ms), int(commits)


def set_catalog(stack, ledger):
    client_id, started, calls = stack.client["client_id"], time.time(), 0
    print("catalog (receiptgate products set; where it refreshes holders' entitlement index, that is timed here):", flush=True)
    for name, (kind, _, _, entitlements) in PRODUCTS.items():
        if not entitlements:
            continue
        for store in ("app_store", "google_play"):
            product = store_product_id(store, name)
            cmd = [stack.binary, "products", "set", "--client", client_id, "--store", store, "--product-id", product]
            for e in entitlements:
                cmd += ["--entitlement", e]
            t = time.time()
            r = subprocess.run(cmd, env=stack.env, capture_output=True, text=True)
            if r.returncode:
                sys.exit(f"products set failed ({r.returncode}): {(r.stderr or r.stdout).strip()[:400]}")
            calls += 1
            holders = len(ledger.holders.get((store, name), ()))
            print(f"  {store:11} {product:40} -> {','.join(entitlements):12} {time.time() - t:7.2f} s  "
                  f"({holders} players bought it)", flush=True)
    took = time.time() - started
    print(f"catalog: {calls} products set in {took:.2f} s", flush=True)
    return took


def resolve_defaults(a):
    smoke = {"players": 2000, "transactions": 20000, "requests": 20000, "duration": 5, "warmup": 2,
             "verify_duration": 3, "verify_requests": 18000}
    full = {"players": 100000, "transactions": 1000000, "requests": 100000, "duration": 15, "warmup": 3,
            "verify_duration": 8, "verify_requests": 80000}
    for key, value in (smoke if a.smoke else full).items():
        if getattr(a, key) is None:
            setattr(a, key, value)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", default=".build/release/receiptgate")
    ap.add_argument("--players", type=int, help="players in the ledger (default 100000; --smoke 2000)")
    ap.add_argument("--transactions", type=int, help="transactions in the ledger (default 1000000; --smoke 20000)")
    ap.add_argument("--path", default=DEFAULT_PATH, help=f"route to read, {{player}} for the player id (default {DEFAULT_PATH})")
    ap.add_argument("--duration", type=int, help="seconds of measured reads (default 15; at most 240: the timestamp window)")
    ap.add_argument("--warmup", type=int, help="seconds of reads before the measured ones (default 3)")
    ap.add_argument("--requests", type=int, help="distinct signed reads rendered, replayed in a loop (default 100000)")
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--verify-duration", type=int, help="seconds of the verify load (default 8)")
    ap.add_argument("--verify-requests", type=int,
                    help="fresh purchases for it, at least 1.2 x verifies/s x seconds (default 80000; ~19k/s to make)")
    ap.add_argument("--no-verify", action="store_true", help="skip the verify load (no ratio)")
    ap.add_argument("--seed", type=int, default=1, help="the ledger's random seed (the same ledger for the same seed)")
    ap.add_argument("--pg-setting", action="append", default=[], metavar="NAME=VALUE",
                    help="a PostgreSQL setting for the throwaway cluster (repeatable), e.g. shared_buffers=1GB")
    ap.add_argument("--wait-quiet", type=float, metavar="PCT",
                    help="before each load, wait until the machine is below PCT%% of one core for 5 s")
    ap.add_argument("--smoke", action="store_true", help="a quick check of the script: small ledger, short loads")
    ap.add_argument("--keep", action="store_true", help="leave the work folder (logs, database) in place")
    ap.add_argument("-v", "--verbose", action="store_true", help="show wrk's own output")
    a = ap.parse_args()
    resolve_defaults(a)
    if "{player}" not in a.path or not a.path.startswith("/"):
        sys.exit(f"--path must start with / and hold {{player}}: {a.path!r}")
    if a.duration + a.warmup > 240:
        sys.exit("--duration + --warmup over 240 s: the last reads would fall outside the 300 s timestamp window")
    if a.transactions < a.players:
        sys.exit("--transactions must be at least --players: every player in the ledger bought something")
    binary = os.path.abspath(a.binary)
    if not os.access(binary, os.X_OK):
        sys.exit(f"no executable at {binary}: swift build -c release (or pass --binary)")
    if not shutil.which("wrk"):
        sys.exit("wrk not found: apt-get install -y wrk")
    for setting in a.pg_setting:
        if "=" not in setting or " " in setting:
            sys.exit(f"--pg-setting wants NAME=VALUE without spaces: {setting!r}")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("stopped by SIGTERM; stopping what was started"))  # cleanup runs

    stack = Stack(binary, label="entitlements", env={"RECEIPTGATE_RATE_LIMITS": "native.client=off"},
                  pg_options=" ".join(f"-c {s}" for s in a.pg_setting), client_args=["--package-name", APP])
    failed = True
    try:
        print(f"stack: {stack.work} (PostgreSQL {stack.pgbin.split('/')[-2]}, serve {binary})", flush=True)
        stack.start()
        client = stack.client
        game_id = stack.psql(f"SELECT coalesce(game_id::text, '-') FROM clients WHERE id = '{client['client_id']}'")[0][0]
        game_id = None if game_id == "-" else game_id  # the rows carry their client's game, as the pipeline records them

        t = time.time()
        ledger = Ledger(a.players, client["client_id"], game_id, a.seed, int(time.time()))
        ledger.fill(a.transactions)
        made = time.time() - t
        t = time.time()
        copy_in(stack.db_url, "transactions", TX_COLUMNS, (line for _, line in ledger.rows))
        copy_in(stack.db_url, "subscriptions", SUB_COLUMNS, ledger.subscriptions)
        copied = time.time() - t
        t = time.time()
        stack.psql("VACUUM ANALYZE")
        k = ledger.kinds
        size = stack.psql("SELECT pg_size_pretty(pg_total_relation_size('transactions'))")[0][0]
        print(f"ledger: {len(ledger.rows)} transactions of {a.players} players ({k['consumable']} consumable, "
              f"{k['non_consumable']} non-consumable, {k['auto_renewable_subscription']} subscription periods; "
              f"{ledger.refunded} refunded), {len(ledger.subscriptions)} subscriptions ({ledger.status['active']} active, "
              f"{ledger.status['expired']} expired); made in {made:.1f} s, COPY {copied:.1f} s, VACUUM ANALYZE "
              f"{time.time() - t:.1f} s; transactions table with indexes {size}", flush=True)
        del ledger.rows

        catalog_s = set_catalog(stack, ledger)
        stack.psql("ANALYZE")  # what the catalog wrote in bulk, as autovacuum soon would
        stack.psql("CHECKPOINT")  # the fill's dirty pages are not flushed during the measured reads

        prefix = os.path.join(stack.work, "reads")
        stamp = render(prefix, a, client, stack.port, a.players, random.Random(a.seed + 1))
        print(f"reads: GET {a.path}, {a.requests} signed requests over random players "
              f"({os.path.getsize(prefix + '.data') / 1e6:.0f} MB), wrk -t{a.threads} -c{a.connections}", flush=True)
        preflight(a, stack, ledger)
        if a.wait_quiet is not None:
            e2e_load.wait_quiet(a.wait_quiet, 600)
        if a.warmup:
            run_wrk(a, stack, prefix, a.warmup)
        if time.time() + a.duration + 10 - stamp > 300:
            stamp = render(prefix, a, client, stack.port, a.players, random.Random(a.seed + 1))
        calls0, exec0, commits0 = statement_counts(stack)
        result, out, cpu, foreign_top, elapsed = run_wrk(a, stack, prefix, a.duration)
        calls1, exec1, commits1 = statement_counts(stack)
        if a.verbose:
            print("".join("    | " + line + "\n" for line in out.splitlines() if not line.startswith("READS_RESULT")), end="")

        n = result["requests"]
        rps = n / (result["duration_us"] / 1e6)
        per_read = {key: 10 * cpu[key] * elapsed / max(n, 1) for key in ("serve", "postmaster", "wrk", "kernel")}
        statuses = {int(s): c for s, c in result["statuses"].items()}
        socket_errors = sum(result[e] for e in ("connect_errors", "read_errors", "write_errors", "timeouts"))
        print(f"reads: {n} in {result['duration_us'] / 1e6:.1f} s = {rps:.0f} reads/s; p50 {result['p50_us'] / 1e3:.2f} ms, "
              f"p90 {result['p90_us'] / 1e3:.2f} ms, p99 {result['p99_us'] / 1e3:.2f} ms, max {result['lat_max_us'] / 1e3:.1f} ms; "
              f"statuses {json.dumps(statuses, sort_keys=True)}; socket errors {socket_errors}", flush=True)
        print(f"  cpu ms per read: service {per_read['serve']:.3f}, postgres {per_read['postmaster']:.3f} "
              f"(wrk {per_read['wrk']:.3f}, kernel {per_read['kernel']:.3f}); other processes used {cpu['foreign']:.0f}% "
              f"of a core meanwhile" + (f" ({foreign_top})" if foreign_top else ""), flush=True)
        print(f"  per read: {(calls1 - calls0) / max(n, 1):.2f} statements, {(commits1 - commits0) / max(n, 1):.2f} commits, "
              f"{(exec1 - exec0) / max(n, 1):.3f} ms of statement execution", flush=True)
        if socket_errors or set(statuses) != {200}:
            sys.exit(f"reads failed: every answer must be 200 (statuses {statuses}, socket errors {socket_errors}); "
                     f"see {stack.work}/serve.log (--keep leaves it)")

        verify = None
        if not a.no_verify:
            if a.wait_quiet is not None:
                e2e_load.wait_quiet(a.wait_quiet, 600)
            print(f"verify: ../shared/bench/e2e_load.py, {a.verify_requests} fresh purchases, {a.verify_duration} s", flush=True)
            stack.warm_up(a.connections)
            results = os.path.join(stack.work, "verify.jsonl")
            run_group(stack.load_command(a.connections) + ["--duration", str(a.verify_duration), "--requests",
                                                           str(a.verify_requests), "--label", "verify", "--json-out", results])
            runs = [json.loads(line) for line in open(results)] if os.path.exists(results) else []
            runs = [r for r in runs if not r.get("summary")]
            if not runs:
                sys.exit("the verify load produced no result")
            verify = runs[0]
            if verify["non2xx"] or verify["socket_errors"]:
                sys.exit(f"verify load failed: {verify['non2xx']} non-2xx, {verify['socket_errors']} socket errors")
            if verify["repeated"]:
                print(f"  WARNING: {verify['repeated']} verifies were repeats (the cheaper duplicate path): raise "
                      f"--verify-requests to {int(1.2 * verify['issued'])}", flush=True)

        a_ms = per_read["serve"] + per_read["postmaster"]
        print(f"catalog set in {catalog_s:.2f} s", flush=True)
        line = (f"entitlement-reads: {rps:.0f} reads/s p50 {result['p50_us'] / 1e3:.2f} ms p99 {result['p99_us'] / 1e3:.2f} ms, "
                f"cpu per read {a_ms:.3f} ms (service {per_read['serve']:.3f} + postgres {per_read['postmaster']:.3f})")
        if verify:
            d_ms = verify["cpu_ms_per_req"]["serve"] + verify["cpu_ms_per_req"]["postmaster"]
            line += f", cpu per verify {d_ms:.3f} ms, ratio A/D = {a_ms / d_ms:.2f} (budget <= 0.33)"
        if a.path != DEFAULT_PATH:
            line += f" [route GET {a.path}]"
        print(line, flush=True)
        failed = False
    finally:
        if failed:
            log = os.path.join(stack.work, "serve.log")
            if os.path.exists(log):  # what the service said, less its per-request lines
                lines = [l for l in open(log, errors="replace") if '"message":"request"' not in l][-8:]
                print("serve.log, last lines but requests:\n" + "".join("  " + l[:300].rstrip() + "\n" for l in lines),
                      end="", file=sys.stderr)
        stack.stop(keep=a.keep)


if __name__ == "__main__":
    main()
