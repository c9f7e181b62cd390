#!/usr/bin/env python3
"""What one verification costs Postgres and the service, counted rather than timed.

    python3 Benchmarks/verify_profile.py [--binary .build/release/receiptgate] [--duration 8] [--connections 64]

Starts a throwaway PostgreSQL with pg_stat_statements, `receiptgate serve` on it (trusting the test root of
../shared/bench/make_corpus.py seed 1) and drives fresh, validly signed StoreKit 2 verifications through
../shared/bench/e2e_load.py (wrk). Then prints, per new transaction: statements executed, committed
transactions, Postgres execution time, and the CPU milliseconds of each process from e2e_load's split (CPU
time, not wall time, so a busy machine disturbs it far less than requests per second), and the statements
themselves. Stops everything it started.
"""
import argparse, json, os, subprocess, threading, time

from bench_stack import Stack


def record_when_loaded(stack, duration, out):
    """`perf record` of the service once the measured load runs: the request files are generated first
    (how long that takes depends on the machine), so this waits for the run's own wrk to appear."""
    needle = f"-d{duration}s"
    for _ in range(6000):
        if any(needle in cmd and f":{stack.port}/" in cmd for cmd in command_lines("wrk")):
            break
        time.sleep(0.1)
    else:
        return
    time.sleep(2)
    subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "499", "-g", "-p", str(stack.proc.pid), "-o", out,
                    "--", "sleep", str(max(duration - 3, 2))], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def command_lines(name):
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and open(f"/proc/{pid}/comm").read().strip() == name:
                yield open(f"/proc/{pid}/cmdline").read().replace("\0", " ")
        except OSError:
            pass


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
    stack = Stack(a.binary, label=a.label, explain=a.explain)
    try:
        stack.start()
        proc, psql = stack.proc, stack.psql
        results = os.path.join(stack.work, "results.jsonl")
        # A short warm-up (chain cache, client cache, connections), then count from zero.
        stack.warm_up(a.connections)
        base = stack.load_command(a.connections)
        before = psql("SELECT count(*) FROM transactions")[0][0]
        commits_before = psql("SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")[0][0]
        psql("SELECT pg_stat_statements_reset()")
        recorder = None
        if a.perf:
            recorder = threading.Thread(target=record_when_loaded, args=(stack, a.duration, a.perf), daemon=True)
            recorder.start()
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
        subprocess.run(base + ["--runs", str(a.runs), "--pause", "1", "--duration", str(a.duration), "--requests", str(a.requests),
                               "--label", a.label, "--json-out", results], check=False)
        done.set()
        if samples:
            print(f"RSS MB every 5 s ({len(samples)} samples): first {samples[0]}, max {max(samples)}, last {samples[-1]}; series {samples}")
        if recorder:
            recorder.join()
        after = psql("SELECT count(*) FROM transactions")[0][0]
        commits_after = psql("SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'")[0][0]
        new = max(int(after) - int(before), 1)
        rows = psql("""
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
        stack.stop(keep=a.keep)


if __name__ == "__main__":
    main()
