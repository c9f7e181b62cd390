#!/usr/bin/env python3
"""The path a real game uses: `POST /v1/verify` for a client with a webhook URL, against the same
build for a client without one, alternating, with a receiver on loopback that answers every webhook.

    python3 Benchmarks/webhook_path.py [--binary .build/release/receiptgate] [--rounds 2] [--duration 15]
                                       [--requests 100000] [--outage 0] [--why-waiting] [--webhook-batch 1]

Two stacks of the one build (bench_stack.py: a PostgreSQL cluster, `receiptgate serve`, a client
each); the second's client has `--webhook-url` pointing at the receiver. Runs alternate A B B A.
Each run prints requests a second, the service's and its Postgres's CPU ms a request (e2e_load.py),
and, for the webhook stack, the webhooks the receiver got a second during the run, the run's
messages still waiting when it ended and how long they took to drain (messages queued after the
run's end are not its backlog), the deliveries that failed (from the service's log, by error) and
what other work queued during the run (messages other than the purchases' webhooks, by type).
`--why-waiting` prints each waiting message's state and timeline (why_waiting.py). `--outage N`: the
receiver answers 503 for the first N seconds of every webhook run (a receiver down under steady
sales), then 200. `--webhook-batch N` gives the webhook client `--webhook-batch N` (up to N events a
POST); the webhooks a second count events, and each run says how many a POST carried.
The receiver (webhook_receiver.c) speaks HTTP/1.1 keep-alive, on its own core-share like wrk.
"""
import argparse, atexit, collections, json, os, statistics, subprocess, sys, tempfile, threading, time

from bench_stack import TUNED_PG_OPTIONS, Stack
from why_waiting import WhyWaiting


class Receiver:
    """Answers every POST with 200 (or 503 while `down`), counting the 200s: webhook_receiver.c,
    built here with the system's C compiler. A game's receiver runs on its own machine; this one
    shares the two cores with what is measured, so it is written to cost as little as a receiver
    can (one thread, epoll, no parsing beyond the head)."""

    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="webhook-receiver-")
        binary = os.path.join(self.work, "webhook_receiver")
        source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "webhook_receiver.c")
        subprocess.run(["cc", "-O2", "-o", binary, source], check=True)
        self.arrivals = os.path.join(self.work, "arrivals.log")
        self.process = subprocess.Popen([binary, self.arrivals], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, bufsize=1)
        self.port = int(self.process.stdout.readline())
        self._down = False
        self.lock = threading.Lock()  # an outage's timer sets `down` from its own thread
        atexit.register(self.process.kill)

    def _ask(self, line, answered=False):
        with self.lock:
            self.process.stdin.write(line + "\n")
            self.process.stdin.flush()
            return self.process.stdout.readline() if answered else None

    @property
    def count(self):
        """Events acknowledged (a batched POST counts each of its events)."""
        return int(self._ask("count", answered=True))

    @property
    def posts(self):
        """POSTs acknowledged."""
        return int(self._ask("posts", answered=True))

    @property
    def down(self):
        return self._down

    @down.setter
    def down(self, value):
        self._down = value
        self._ask("down" if value else "up")

    @property
    def received(self):
        """When each event id arrived (monotonic seconds): tells a message sent but not recorded
        delivered from one never sent."""
        self._ask("flush", answered=True)
        arrived = collections.defaultdict(list)
        with open(self.arrivals) as lines:
            for line in lines:
                event_id, at = line.split()
                arrived[event_id].append(float(at))
        return arrived

    @property
    def cpu_seconds(self):
        """The CPU the receiver has used, user and system, from /proc."""
        fields = open(f"/proc/{self.process.pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}/hooks"


def pending(stack, up_to=None):
    """Messages waiting; `up_to`: only those written up to that outbox id (a run's own, not what
    other work writes after it)."""
    below = f" AND id <= {up_to}" if up_to is not None else ""
    waiting = int(stack.psql(f"SELECT count(*) FROM outbox WHERE status = 'pending'{below}")[0][0])
    # Handed messages in flight (written delivered, not yet settled by their sender) wait too.
    if stack.psql("SELECT to_regclass('outbox_handed') IS NOT NULL")[0][0] == "t":
        waiting += int(stack.psql(
            "SELECT count(*) FROM outbox_handed b JOIN outbox o ON o.id BETWEEN b.first_id AND b.last_id"
            f" AND o.handed_in = b.first_id WHERE o.status = 'delivered'{below.replace('id', 'o.id')}")[0][0])
    return waiting


def last_id(stack):
    return int(stack.psql("SELECT COALESCE(max(id), 0) FROM outbox")[0][0])


def log_size(stack):
    path = os.path.join(stack.work, "serve.log")
    return os.path.getsize(path) if os.path.exists(path) else 0


def failed_deliveries(stack, since):
    """The service's "outbox delivery failed" lines after byte `since` of its log, counted by error."""
    counted = collections.Counter()
    with open(os.path.join(stack.work, "serve.log"), errors="replace") as f:
        f.seek(since)
        for raw in f:
            if "outbox delivery failed" not in raw:
                continue
            try:
                counted[(json.loads(raw).get("error") or "")[:80]] += 1
            except ValueError:
                pass
    return counted


def other_work(stack, after, up_to):
    """Messages other than the purchases' own webhooks written between two outbox ids, by type."""
    return {kind: int(n) for kind, n in stack.psql(f"""
        SELECT event_type || '/' || target, count(*) FROM outbox
        WHERE id > {after} AND id <= {up_to} AND event_type <> 'transaction.verified' GROUP BY 1 ORDER BY 2 DESC""")}


def describe(r):
    """The webhook half of a run's line: delivered, waiting, drained, failed, other work."""
    failed = sum(r["failed"].values())
    why = "; ".join(f"{n} {error}" for error, n in r["failed"].most_common(3))
    other = ", ".join(f"{n} {kind}" for kind, n in r["other_work"].items())
    return (f"webhooks {r['webhooks_per_s']:.0f}/s ({r['events_per_post']:.1f} a POST; receiver CPU {r['receiver_cpu_ms']:.3f} ms each), {r['waiting_at_end']} waiting at the end, drained in {r['drain_s']:.1f} s "
            f"({r['still_waiting']} left); {failed} deliveries failed{' (' + why + ')' if why else ''}"
            f"{'; other work queued ' + other if other else ''}")


def outage_under_load(receiver, load, seconds):
    """The receiver answers 503 for `seconds` from when the load starts: e2e_load.py first writes
    its fresh requests (several seconds for 100,000), and an outage timed from its start was over
    before the first purchase."""
    while load.poll() is None and subprocess.run(["pgrep", "-x", "-P", str(load.pid), "wrk"],
                                                 stdout=subprocess.DEVNULL).returncode != 0:
        time.sleep(0.05)
    if load.poll() is not None:
        return
    receiver.down = True
    time.sleep(seconds)
    receiver.down = False


def one_run(stack, a, run_no, receiver=None):
    results = os.path.join(stack.work, f"run-{run_no}.jsonl")
    before = receiver.count if receiver else 0
    posts_before = receiver.posts if receiver else 0
    receiver_cpu = receiver.cpu_seconds if receiver else 0
    why = WhyWaiting(stack, receiver) if receiver and getattr(a, "why_waiting", False) else None
    first, log_from = last_id(stack), log_size(stack)
    started = time.time()
    load = subprocess.Popen(stack.load_command(a.connections) + ["--duration", str(a.duration), "--requests", str(a.requests),
                                                                 "--label", stack.label, "--json-out", results],
                            stdout=subprocess.DEVNULL)
    if receiver and a.outage:
        threading.Thread(target=outage_under_load, args=(receiver, load, a.outage), daemon=True).start()
    load.wait()
    took = time.time() - started
    lines = [json.loads(line) for line in open(results)] if os.path.exists(results) else []
    runs = [d for d in lines if not d.get("summary")]
    if not runs:
        sys.exit(f"e2e_load.py produced no result for {stack.label}; see {stack.work}")
    r = runs[0]
    if receiver:
        delivered = receiver.count - before
        r["webhooks_per_s"] = delivered / took
        r["events_per_post"] = delivered / max(1, receiver.posts - posts_before)
        r["receiver_cpu_ms"] = 1000 * (receiver.cpu_seconds - receiver_cpu) / max(1, delivered)
        # The run's messages: those written by its end. What other work (an expiry sweep, say)
        # queues afterwards is not the run's backlog, and is reported as other work instead.
        end = last_id(stack)
        r["waiting_at_end"] = pending(stack, end)
        drain_start = time.time()
        if why:
            why.at_end()
        while pending(stack, end) > 0 and time.time() - drain_start < 600:
            time.sleep(0.5)
        r["drain_s"] = time.time() - drain_start
        r["still_waiting"] = pending(stack, end)
        r["failed"] = failed_deliveries(stack, log_from)
        r["other_work"] = other_work(stack, first, end)
        if why:
            why.after_drain()
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=".build/release/receiptgate")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of A B B A")
    ap.add_argument("--duration", type=int, default=15)
    ap.add_argument("--requests", type=int, default=100000)
    ap.add_argument("--connections", type=int, default=64)
    ap.add_argument("--outage", type=int, default=0, help="seconds the receiver answers 503 at the start of each webhook run")
    ap.add_argument("--why-waiting", action="store_true",
                    help="print the messages left at each run's end, their timelines and the outbox's log lines (why_waiting.py)")
    ap.add_argument("--webhook-batch", type=int, default=1,
                    help="the webhook client's --webhook-batch: up to N events a POST (default 1: each alone)")
    ap.add_argument("--tuned", action="store_true",
                    help="both clusters with the settings docs/operations.md recommends (bench_stack.TUNED_PG_OPTIONS)")
    a = ap.parse_args()
    if 2 * a.rounds >= 16:
        sys.exit("at most 7 rounds: a build serving more than 16 runs' keys loses the fixed-key table")
    receiver = Receiver()
    pg_options = TUNED_PG_OPTIONS if a.tuned else ""
    stacks = {"A": Stack(a.binary, label="no-webhook", pg_options=pg_options),
              "B": Stack(a.binary, label="webhook", env={"RECEIPTGATE_OUTBOUND_ALLOW_PRIVATE": "on"},
                         client_args=["--webhook-url", receiver.url, "--allow-insecure-url",
                                      "--webhook-batch", str(a.webhook_batch)], pg_options=pg_options)}
    measured = {"A": [], "B": []}
    try:
        for stack in stacks.values():
            stack.start().warm_up(a.connections)
        if pending(stacks["B"]):
            while pending(stacks["B"]) > 0:
                time.sleep(0.5)
        run_no = 0
        for _ in range(a.rounds):
            for name in "ABBA":
                run_no += 1
                r = one_run(stacks[name], a, run_no, receiver if name == "B" else None)
                measured[name].append(r)
                cpu = r["cpu_ms_per_req"]
                extra = "  " + describe(r) if name == "B" else ""
                print(f"{stacks[name].label:10} run {run_no:2}: {r['rps']:8.1f} req/s  p99 {r['p99_ms']:.2f} ms  non-2xx {r['non2xx']}  "
                      f"service {cpu.get('serve')} ms  postgres {cpu.get('postmaster')} ms{extra}", flush=True)
        rps = {name: statistics.median(r["rps"] for r in runs) for name, runs in measured.items()}
        for name, runs in measured.items():
            print(f"{stacks[name].label}: req/s median {rps[name]:.0f}; service CPU median "
                  f"{statistics.median(r['cpu_ms_per_req']['serve'] for r in runs):.3f} ms, Postgres median "
                  f"{statistics.median(r['cpu_ms_per_req']['postmaster'] for r in runs):.3f} ms")
        b = measured["B"]
        print(f"webhook path: {rps['B'] / rps['A']:.2f}x the throughput without a webhook; webhooks delivered median "
              f"{statistics.median(r['webhooks_per_s'] for r in b):.0f}/s; waiting at the end median "
              f"{statistics.median(r['waiting_at_end'] for r in b):.0f}, drained in median {statistics.median(r['drain_s'] for r in b):.1f} s")
    finally:
        for stack in stacks.values():
            stack.stop()


if __name__ == "__main__":
    main()
