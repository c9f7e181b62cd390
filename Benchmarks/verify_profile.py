#!/usr/bin/env python3
"""What one verification costs Postgres and the service, counted rather than timed (issue 13).

    python3 Benchmarks/verify_profile.py [--binary .build/release/receiptgate] [--duration 8] [--connections 64]

Starts a throwaway PostgreSQL with pg_stat_statements, `receiptgate serve` on it (trusting the test root of
../shared/bench/make_corpus.py seed 1) and drives fresh, validly signed StoreKit 2 verifications through
../shared/bench/e2e_load.py (wrk). Then prints, per new transaction: statements executed, committed
transactions, Postgres execution time, and the CPU milliseconds of each process from e2e_load's split (CPU
time, not wall time, so a busy machine disturbs it far less than requests per second), and the statements
themselves. Stops everything it started.
"""
import argparse, glob, json, os, shutil, signal, subprocess, sys, tempfile, threading, time, urllib.request

BENCH = os.environ.get("RECEIPTGATE_SHARED_BENCH", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "bench"))
sys.path.insert(0, BENCH)
from side_by_side import as_pg, free_port  # noqa: E402


def psql(pgbin, work, port, sql):
    r = as_pg(os.path.join(pgbin, "psql"), "-h", work, "-p", str(port), "-U", "postgres", "-d", "postgres", "-At", "-F", "\t", "-c", sql)
    if r.returncode:
        sys.exit("psql failed: " + r.stderr[-400:])
    return [line.split("\t") for line in r.stdout.splitlines() if line]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=".build/release/receiptgate")
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--requests", type=int, default=20000, help="fresh tokens (about 1.2 x expected req/s x duration; generating them takes time)")
    ap.add_argument("--label", default="receiptgate")
    ap.add_argument("--keep", action="store_true", help="leave the work folder (logs) in place")
    ap.add_argument("--runs", type=int, default=1, help="runs back to back (fresh tokens each; duration is capped at 240 s a run)")
    ap.add_argument("--rss", action="store_true", help="sample the service's resident memory every 5 s and print the series")
    ap.add_argument("--explain", action="store_true", help="log plans of statements over 2 ms (auto_explain) into <work>/pg.log; implies --keep")
    ap.add_argument("--perf", metavar="FILE", help="also `perf record -g` the service during the run into FILE")
    a = ap.parse_args()
    a.keep = a.keep or a.explain
    binp = os.path.abspath(a.binary)
    work = tempfile.mkdtemp(prefix="rg-profile-")
    os.chmod(work, 0o777)
    pgbin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
    pgdata, pgport = os.path.join(work, "pg"), free_port()
    root = os.path.join(work, "pki")
    subprocess.run([sys.executable, os.path.join(BENCH, "make_corpus.py"), "--n", "1", "--seed", "1", "--out", root], check=True, capture_output=True)
    r = as_pg(os.path.join(pgbin, "initdb"), "-D", pgdata, "--auth=trust", "-U", "postgres")
    if r.returncode:
        sys.exit("initdb failed: " + r.stderr[-300:])
    r = as_pg(os.path.join(pgbin, "pg_ctl"), "-D", pgdata, "-w", "-l", os.path.join(work, "pg.log"), "-o",
              f"-p {pgport} -k {work} -c listen_addresses='' -c max_connections=300 -c shared_preload_libraries=pg_stat_statements "
              "-c pg_stat_statements.track=all" + (" -c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=2"
                                                   " -c auto_explain.log_analyze=on -c auto_explain.log_timing=on" if a.explain else ""), "start")
    if r.returncode:
        sys.exit("pg_ctl start failed: " + r.stderr[-300:])
    db_url = f"postgresql://postgres@/postgres?host={work}&port={pgport}"
    port = free_port()
    env = dict(os.environ, DATABASE_URL=db_url, RECEIPTGATE_PORT=str(port), RECEIPTGATE_HOST="127.0.0.1",
               RECEIPTGATE_DATA_DIR=os.path.join(work, "data"), RECEIPTGATE_LOG_LEVEL="info",
               RECEIPTGATE_APPLE_ROOT_CERTS=os.path.join(root, "root.der"),
               RECEIPTGATE_MASTER_KEY="AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
    log = open(os.path.join(work, "serve.log"), "w")
    proc = subprocess.Popen([binp, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        for _ in range(200):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).status == 200:
                    break
            except Exception:
                time.sleep(0.3)
        else:
            sys.exit("serve did not become healthy; see " + log.name)
        out = subprocess.run([binp, "client", "create", "--name", "bench", "--bundle-id", "vn.example.iapbench",
                              "--environments", "production,sandbox"], env=env, capture_output=True, text=True, check=True)
        client = json.loads(out.stdout)
        psql(pgbin, work, pgport, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        pidfile = os.path.join(work, "serve.pid")
        open(pidfile, "w").write(str(proc.pid))
        results = os.path.join(work, "results.jsonl")
        # A short warm-up (chain cache, client cache, connections), then count from zero.
        base = [sys.executable, os.path.join(BENCH, "e2e_load.py"), "--url", f"http://127.0.0.1:{port}/v1/verify",
                "--client-id", client["client_id"], "--secret", client["client_secret"], "--db-url", db_url,
                "--workdir", os.path.join(work, "load"), "--connections", str(a.connections)]
        subprocess.run(base + ["--duration", "2", "--requests", "3000", "--no-preflight"], check=False, capture_output=True)
        before = psql(pgbin, work, pgport, "SELECT count(*) FROM transactions")[0][0]
        commits_before = psql(pgbin, work, pgport, "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")[0][0]
        psql(pgbin, work, pgport, "SELECT pg_stat_statements_reset()")
        recorder = None
        if a.perf:
            # Starts once the load is running (token generation first), stops before it ends.
            delay = 2 + a.requests / 2500
            recorder = subprocess.Popen(["sh", "-c", f"sleep {delay:.0f}; exec perf record -F 499 -g -p {proc.pid} -o {a.perf} -- sleep {max(a.duration - 3, 2)}"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples, done = [], threading.Event()

        def sample_rss():
            while not done.wait(5):
                try:
                    kb = next(int(line.split()[1]) for line in open(f"/proc/{proc.pid}/status") if line.startswith("VmRSS:"))
                    samples.append(round(kb / 1024, 1))
                except (OSError, StopIteration):
                    return
        if a.rss:
            threading.Thread(target=sample_rss, daemon=True).start()
        subprocess.run(base + ["--runs", str(a.runs), "--pause", "1",
                               "--duration", str(a.duration), "--requests", str(a.requests), "--no-preflight", "--label", a.label,
                               "--pidfile", pidfile, "--pidfile", os.path.join(pgdata, "postmaster.pid"), "--json-out", results],
                       check=False)
        done.set()
        if samples:
            print(f"RSS MB every 5 s ({len(samples)} samples): first {samples[0]}, max {max(samples)}, last {samples[-1]}; series {samples}")
        if recorder:
            recorder.wait()
        after = psql(pgbin, work, pgport, "SELECT count(*) FROM transactions")[0][0]
        commits_after = psql(pgbin, work, pgport, "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")[0][0]
        new = max(int(after) - int(before), 1)
        rows = psql(pgbin, work, pgport, """
            SELECT calls, round(total_exec_time::numeric, 1), regexp_replace(left(query, 90), '\\s+', ' ', 'g')
            FROM pg_stat_statements WHERE query NOT ILIKE '%pg_stat_%' ORDER BY calls DESC LIMIT 14""")
        statements = sum(int(r[0]) for r in rows)
        exec_ms = sum(float(r[1]) for r in rows)
        print(f"\n== {a.label}: {new} new transactions")
        print(f"statements per verification: {statements / new:.2f}   commits per verification: {(int(commits_after) - int(commits_before)) / new:.2f}"
              f"   postgres execution ms per verification: {exec_ms / new:.3f}")
        for r in rows:
            print(f"  {int(r[0]) / new:6.2f}/verification  {float(r[1]) / new:7.3f} ms  {r[2]}")
        for line in open(results) if os.path.exists(results) else []:
            d = json.loads(line)
            if not d.get("summary"):
                print("run:", json.dumps({k: d[k] for k in d if k in ("rps", "p50_ms", "p99_ms", "non2xx", "cpu_ms_per_req", "new_rows")}))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        as_pg(os.path.join(pgbin, "pg_ctl"), "-D", pgdata, "-m", "fast", "stop")
        if a.keep:
            print("work folder kept:", work)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
