"""Why the outbox messages left at a run's end wait (webhook_path.py and year_ledger.py,
`--why-waiting`): the waiting rows as the run ended (state, attempts, last error, lease, when
due), then, once drained, each one's timeline — when the receiver got it (by its X-Event-Id) and
when it was recorded delivered, in seconds from the run's end — and the service's outbox log
lines during the run and the drain, counted by message and error.
"""
import json, os, time

# Pending rows with what decides when they go. Seconds are relative to now (the run's end).
WAITING = """
    SELECT o.id, o.event_id, o.event_type || '/' || o.target AS kind, o.attempts, o.is_head, o.placed,
           round(extract(epoch FROM o.lease_until - now())::numeric, 1) AS lease_left,
           round(extract(epoch FROM o.next_attempt_at - now())::numeric, 1) AS due_in,
           round(extract(epoch FROM now() - o.created_at)::numeric, 1) AS age,
           COALESCE(left(o.last_error, 80), '') AS last_error, o.client_id || '/' || o.aggregate_key || '/' || o.target AS aggregate
    FROM outbox o WHERE o.status = 'pending' ORDER BY o.id
"""
# No subquery per row: on a backlog that grew within seconds the planner has no statistics for
# it, and a correlated lookup planned for a few rows reads the whole backlog once per row.


class WhyWaiting:
    def __init__(self, stack, receiver):
        self.stack, self.receiver = stack, receiver
        self.log = os.path.join(stack.work, "serve.log")
        self.log_from = os.path.getsize(self.log) if os.path.exists(self.log) else 0

    def at_end(self):
        """Called as the load ends: the rows left, and the monotonic instant counted from."""
        self.ended = time.monotonic()
        # Which had arrived at the end, before the query: the receiver goes on meanwhile.
        arrived = set(self.receiver.received) if self.receiver else set()
        self.rows = self.stack.psql(WAITING)
        self.last_id = self.stack.psql("SELECT COALESCE(max(id), 0) FROM outbox")[0][0]
        print(f"  why waiting: {len(self.rows)} pending as the run ended", flush=True)
        kinds = {}
        headed = {row[-1] for row in self.rows if row[4] == "t"}
        for _, event_id, kind, attempts, head, placed, lease_left, due_in, age, error, aggregate in self.rows:
            got, behind = event_id in arrived, "t" if head != "t" and aggregate in headed else "f"
            state = ("leased" if lease_left else "backed off" if attempts != "0" and float(due_in or 0) > 0
                     else "parked" if float(due_in or 0) > 0 else "due") + (" head" if head == "t" else " behind" if behind == "t" else " unplaced" if placed == "f" else " headless")
            key = (kind + " " + state, attempts, error, "received" if got else "not received")
            kinds.setdefault(key, []).append((float(lease_left or 0), float(due_in or 0), float(age or 0)))
        for (state, attempts, error, got), values in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            leases, dues, ages = zip(*values)
            print(f"    {len(values):4} {state}, attempts {attempts}, {got} by the receiver, lease left "
                  f"{min(leases):.1f}..{max(leases):.1f} s, due in {min(dues):.1f}..{max(dues):.1f} s, written "
                  f"{min(ages):.1f}..{max(ages):.1f} s ago{', last error: ' + error if error else ''}", flush=True)

    def after_drain(self):
        """Each waiting row's timeline, and the outbox's log lines since the run started."""
        if not self.rows:
            return
        low, high = min(int(row[0]) for row in self.rows), max(int(row[0]) for row in self.rows)
        went = {event_id: (float(at) if at else None, attempts) for event_id, at, attempts in self.stack.psql(f"""
            SELECT event_id, extract(epoch FROM delivered_at - now()), attempts FROM outbox WHERE id BETWEEN {low} AND {high}""")}
        since_end = time.monotonic() - self.ended
        arrived = self.receiver.received if self.receiver else {}
        lines = []
        for row in self.rows:
            event_id = row[1]
            at, attempts = went.get(event_id, (None, "?"))
            delivered = f"delivered at +{since_end + at:.0f} s" if at is not None else "not delivered"
            got = [f"{t - self.ended:+.0f}" for t in arrived.get(event_id, [])]
            lines.append(f"{delivered}, attempts {attempts}, received at [{', '.join(got)}] s")
        for kind, status, n in self.stack.psql(f"""
                SELECT event_type || '/' || target, status, count(*) FROM outbox WHERE id > {self.last_id} GROUP BY 1, 2"""):
            print(f"  why waiting: written during the drain: {n} {kind}, {status}")
        counted = {}
        for line in lines:
            counted[line] = counted.get(line, 0) + 1
        print("  why waiting: each message's timeline (whole seconds from the run's end), the commonest 15")
        for line, n in sorted(counted.items(), key=lambda kv: -kv[1])[:15]:
            print(f"    {n:4} x {line}")
        self.log_lines()

    def log_lines(self):
        if not os.path.exists(self.log):
            return
        counted = {}
        with open(self.log, errors="replace") as f:
            f.seek(self.log_from)
            for raw in f:
                try:
                    line = json.loads(raw)
                except ValueError:
                    continue
                if line.get("level") not in ("warning", "error"):
                    continue
                key = (line.get("level"), line.get("message"), (line.get("error") or "")[:100])
                counted[key] = counted.get(key, 0) + 1
        print(f"  why waiting: the service's warnings and errors since the run started: {sum(counted.values())}")
        for (level, message, error), n in sorted(counted.items(), key=lambda kv: -kv[1]):
            print(f"    {n:6} {level}: {message}{' — ' + error if error else ''}", flush=True)
