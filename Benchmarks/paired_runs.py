#!/usr/bin/env python3
"""Two builds of receiptgate under the same load, interleaved, for a before/after line.

    python3 Benchmarks/paired_runs.py --a OLD/receiptgate --b NEW/receiptgate [--rounds 4] [--duration 10] [--requests 100000]
        [--a-sql "ALTER TABLE ..."]

This machine's speed drifts by 10-15 % within an hour, more than most single changes are worth, so
one run of each build tells nothing. Each build gets a stack of its own (PostgreSQL cluster,
`receiptgate serve`, client: bench_stack.py); then `e2e_load.py` loads them in turn, in the order
A B B A, A B B A..., so a drift in the machine's speed falls on both alike. Every run sends fresh,
validly signed StoreKit 2 purchases (keep --requests above 1.2 x rate x duration, or a run repeats
requests and takes the cheaper duplicate path). It prints each run's line and, per build, the
median of the service's and its Postgres's CPU milliseconds a request, and the difference.

Each e2e_load.py invocation signs with a new leaf certificate, so each run is a new key to the
service; fewer than 16 runs a build keep every run on the fixed-key ES256 table (docs/benchmarks.md).

`--webhook` gives both clients a webhook URL (a receiver on loopback answering every one,
webhook_path.py's): the path a real game uses, for a change to the outbox or its delivery.

`--a-sql` runs SQL on A's database once it has started: with the same build as A and B, it times
a database-side change alone (e.g. `ALTER TABLE transactions DISABLE TRIGGER ledger_days_transactions_insert`,
the verify path without the analytics roll-up).
"""
import argparse, json, os, statistics, subprocess, sys

from bench_stack import Stack


def one_run(stack, a, run_no):
    results = os.path.join(stack.work, f"run-{run_no}.jsonl")
    subprocess.run(stack.load_command(a.connections) + ["--duration", str(a.duration), "--requests", str(a.requests),
                                                        "--label", stack.label, "--json-out", results],
                   check=False, stdout=subprocess.DEVNULL)
    lines = [json.loads(line) for line in open(results)] if os.path.exists(results) else []
    runs = [d for d in lines if not d.get("summary")]
    if not runs:
        sys.exit(f"e2e_load.py produced no result for {stack.label}; see {stack.work}")
    return runs[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="the old build's receiptgate")
    ap.add_argument("--b", required=True, help="the new build's receiptgate")
    ap.add_argument("--rounds", type=int, default=4, help="rounds of A B B A (two runs of each build a round)")
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--a-sql", default="", help="SQL run on A's database after it started")
    ap.add_argument("--webhook", action="store_true", help="both clients with a webhook URL to an answering receiver")
    a = ap.parse_args()
    if 2 * a.rounds >= 16:
        sys.exit("at most 7 rounds: a build serving more than 16 runs' keys loses the fixed-key table")
    hooks = {}
    if a.webhook:
        from webhook_path import Receiver
        hooks = {"env": {"RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE": "on"},
                 "client_args": ["--webhook-url", Receiver().url, "--allow-insecure-url"]}
    stacks = {"A": Stack(a.a, label="A", **hooks), "B": Stack(a.b, label="B", **hooks)}
    measured = {"A": [], "B": []}
    try:
        for name, stack in stacks.items():
            stack.start()
            if name == "A" and a.a_sql:
                stack.psql(a.a_sql)
            stack.warm_up(a.connections)
        run_no = 0
        for _ in range(a.rounds):
            for name in "ABBA":
                run_no += 1
                r = one_run(stacks[name], a, run_no)
                cpu = r["cpu_ms_per_req"]
                measured[name].append(r)
                print(f"{name} run {run_no:2}: {r['rps']:8.1f} req/s  p50 {r['p50_ms']:.2f} p99 {r['p99_ms']:.2f} ms  "
                      f"non-2xx {r['non2xx']}  repeated {r['repeated']}  service {cpu.get('serve')} ms  "
                      f"postgres {cpu.get('postmaster')} ms", flush=True)
        medians = {}
        for name, runs in measured.items():
            service = [r["cpu_ms_per_req"]["serve"] for r in runs]
            postgres = [r["cpu_ms_per_req"]["postmaster"] for r in runs]
            medians[name] = statistics.median(service)
            print(f"{name} ({stacks[name].binary}): service CPU ms a request, median {medians[name]:.3f} of {service}; "
                  f"Postgres median {statistics.median(postgres):.3f}; req/s median {statistics.median(r['rps'] for r in runs):.0f}")
        print(f"B against A: service CPU {100 * (medians['B'] / medians['A'] - 1):+.1f} %")
    finally:
        for stack in stacks.values():
            stack.stop()


if __name__ == "__main__":
    main()
