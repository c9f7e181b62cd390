"""The failover drill's measuring part (drill.sh starts the cluster and the service first):
load, kill -9 of the leader's Patroni and postmaster, recovery, the checks, the old leader's
return. Prints one JSON line of figures; exits 1 when a check fails. Standard library only."""
import argparse
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from drill_load import EntitlementReads, Load, WebhookSink, read, verify

HERE = os.path.dirname(os.path.abspath(__file__))


def http_get(port, path):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=4) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except OSError:
        return 0, ""


def members(summary):
    for node in summary["nodes"]:
        try:
            with urllib.request.urlopen(node["patroni_url"] + "/cluster", timeout=2) as response:
                return json.load(response)["members"]
        except OSError:
            continue
    return []


def wait_for(condition, seconds, step=0.1):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return False


def pid_in(path):
    try:
        with open(path) as file:
            return int(file.readline().strip())
    except (OSError, ValueError):
        return None


class ReadinessWatch:
    """Polls /readyz through the outage: did the service say not ready, and when ready again."""

    def __init__(self, port):
        self.port, self.not_ready_seen, self.ready_again = port, False, None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping.is_set():
            status, _ = http_get(self.port, "/readyz")
            if status == 503:
                self.not_ready_seen = True
            elif status == 200 and self.not_ready_seen and self.ready_again is None:
                self.ready_again = time.monotonic()
            time.sleep(0.2)


def stored_transaction_ids(database_url, ids):
    """How many of `ids` the primary holds, and the most rows any one of them has."""
    # The ids go in on stdin: thousands of them do not fit in one argument.
    script = "CREATE TEMP TABLE acknowledged (transaction_id text);\nCOPY acknowledged FROM STDIN;\n" + "\n".join(ids) \
        + "\n\\.\nSELECT count(DISTINCT a.transaction_id), coalesce(max(n), 0) FROM acknowledged a LEFT JOIN " \
        + "(SELECT transaction_id, count(*) n FROM transactions GROUP BY transaction_id) t USING (transaction_id) WHERE n IS NOT NULL;\n"
    result = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", database_url],
                            input=script, capture_output=True, text=True, timeout=60, check=True)
    found, most = result.stdout.strip().splitlines()[-1].split("|")
    return int(found), int(most)


def resend(port, credentials, tokens):
    """Sends already-acknowledged purchases again: each must be 200 with duplicate true."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=35)
    answers = [verify(connection, credentials["client_id"], credentials["client_secret"].encode(), t) for t in tokens]
    return sum(1 for status, body in answers if status == 200 and body and body.get("duplicate") is True)


def restart_node(directory, index):
    script = f'source "{HERE}/lib.sh"; ha_ports "$(cat "$1/ports")"; ha_start_node "$1" {index}'
    subprocess.run(["bash", "-c", script, "drill", directory], check=True)


def kill_leader(args, summary):
    leader = next(m["name"] for m in members(summary) if m["role"] == "leader")
    node_dir = os.path.join(args.dir, leader)
    for pid in (pid_in(os.path.join(node_dir, "patroni.pid")), pid_in(os.path.join(node_dir, "data", "postmaster.pid"))):
        if pid:
            os.kill(pid, signal.SIGKILL)
    return leader, time.monotonic()


def old_leader_rejoined(summary, leader):
    return any(m["name"] == leader and m["role"] in ("replica", "sync_standby") and m["state"] == "streaming"
               for m in members(summary))


def main():
    parser = argparse.ArgumentParser()
    for name in ("--dir", "--summary", "--client", "--tokens", "--owned"):
        parser.add_argument(name, required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--webhook-port", type=int, required=True)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--warmup-seconds", type=float, default=5)
    args = parser.parse_args()
    with open(args.summary) as file:
        summary = json.loads(file.read().strip().splitlines()[-1])
    with open(args.client) as file:
        credentials = json.load(file)
    with open(args.tokens) as file:
        tokens = [line.strip() for line in file if line.strip()]
    figures, failures = {}, []
    with urllib.request.urlopen(summary["nodes"][0]["patroni_url"] + "/config", timeout=5) as response:
        dynamic = json.load(response)
    figures.update({"patroni_ttl": dynamic["ttl"], "patroni_loop_wait": dynamic["loop_wait"]})

    sink = WebhookSink(args.webhook_port)
    players = claim_owned(args, credentials, failures)
    reads = EntitlementReads(args.port, credentials["client_id"], credentials["client_secret"], players, "season_pass")
    load = Load(args.port, credentials["client_id"], credentials["client_secret"], tokens, args.connections)
    started = time.monotonic()
    # Where reads were served, counted over the entitlement readers' run alone (the ledger read
    # checked later is served on its own).
    counted_before_reads = ledger_read_counts(args.port)
    load.start()
    reads.start()
    if not wait_for(lambda: load.count(200) > 0, 30):
        failures.append("no verification succeeded before the kill")
    time.sleep(args.warmup_seconds)  # a fixed measuring window, not a wait for a condition
    figures["verifications_per_sec_before"] = round(load.count(200) / (time.monotonic() - started))
    watch = ReadinessWatch(args.port)
    leader, killed = kill_leader(args, summary)
    figures["killed"] = leader
    if not wait_for(lambda: load.count(200, after=killed) > 0, 60):
        failures.append("no verification succeeded within 60 s of the kill")
    wait_for(lambda: load.count(200, after=killed) >= 2000, 5)  # some load on the new primary
    load.stop()
    reads.stop()
    counted_after_reads = ledger_read_counts(args.port)
    served_to_readers = {label: count - counted_before_reads.get(label, 0) for label, count in counted_after_reads.items()}
    watch.stopping.set()
    new_leader = next((m["name"] for m in members(summary) if m["role"] == "leader"), None)
    figures["new_leader"] = new_leader
    first_success = min((a[1] for a in load.answers if a[2] == 200 and a[0] >= killed), default=None)
    figures["recovery_seconds"] = round(first_success - killed, 2) if first_success else None
    figures["readyz_not_ready_seen"] = watch.not_ready_seen
    figures["readyz_ready_after_seconds"] = round(watch.ready_again - killed, 2) if watch.ready_again else None
    statuses = {}
    for answer in load.answers:
        statuses[str(answer[2])] = statuses.get(str(answer[2]), 0) + 1
    figures["answers"] = statuses
    if set(statuses) - {"200", "503"}:
        failures.append(f"answers other than 200 and 503: {statuses}")
    if any(a[4] and a[4].get("missing_retry_after") for a in load.answers):
        failures.append("a 503 without Retry-After")
    if not watch.not_ready_seen:
        failures.append("/readyz never said not ready while there was no primary")
    figures.update(check_ledger(args, summary, credentials, load, failures))
    figures.update(check_outbox(load, sink, killed, failures))
    figures.update(check_read_standby(args, summary, credentials, load, failures))
    figures.update(check_entitlement_reads(reads, served_to_readers, killed, first_success, failures))
    figures.update(check_rejoin(args, summary, leader, failures))
    figures["checks_failed"] = failures
    print(json.dumps(figures))
    sys.exit(1 if failures else 0)


def check_ledger(args, summary, credentials, load, failures):
    acknowledged = [a for a in load.answers if a[2] == 200]
    ids = [a[4]["transaction"]["transaction_id"] for a in acknowledged]
    found, most = stored_transaction_ids(summary["database_url"], ids)
    figures = {"acknowledged": len(ids), "acknowledged_lost": len(ids) - found}
    if found != len(ids):
        failures.append(f"{len(ids) - found} acknowledged verifications are not on the new primary")
    if most > 1:
        failures.append("a transaction was recorded more than once")
    sample = [load.tokens[a[3]] for a in acknowledged[:: max(1, len(acknowledged) // 100)]]
    duplicates = resend(args.port, credentials, sample)
    figures["resent_answered_duplicate"] = f"{duplicates}/{len(sample)}"
    if duplicates != len(sample):
        failures.append("a purchase sent again after the failover was not answered as a duplicate")
    listening = wait_for(lambda: "receiptgate_client_cache_listening 1" in http_get(args.port, "/metrics")[1], 30, 0.5)
    figures["client_cache_listening_again"] = listening
    if not listening:
        failures.append("the client cache did not LISTEN again on the new primary")
    return figures


def check_outbox(load, sink, killed, failures):
    """The outbox workers resumed on the new primary: every purchase acknowledged after the kill
    reaches the game server's webhook."""
    after = {a[4]["transaction"]["transaction_id"] for a in load.answers if a[2] == 200 and a[0] >= killed}
    delivered = wait_for(lambda: sink.delivered(after) == len(after), 120, 0.5)
    if not delivered:
        failures.append(f"webhooks of {len(after) - sink.delivered(after)} purchases acknowledged after the failover never came")
    return {"webhooks_after_failover_delivered": f"{sink.delivered(after)}/{len(after)}"}


def receiptgate_sessions(summary, node):
    """ReceiptGate's sessions on one node that last read the ledger (they name themselves receiptgate/<pid>)."""
    url = summary["database_read_url"].split("@")[0] + f"@{node['host']}:{node['port']}/receiptgate?" \
        + summary["database_read_url"].split("?")[1].replace("prefer-standby", "any")
    result = subprocess.run(["psql", "-X", "-At", "-d", url, "-c",
                             "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'receiptgate/%' AND query LIKE '%FROM transactions%'"],
                            capture_output=True, text=True, timeout=30)
    return int(result.stdout.strip() or 0)


def ledger_read_counts(port):
    """`/metrics`' receiptgate_ledger_reads_total, by its labels: where the service sent its ledger reads."""
    metrics = http_get(port, "/metrics")[1]
    return {line.rsplit(" ", 1)[0].removeprefix("receiptgate_ledger_reads_total"): int(line.rsplit(" ", 1)[1])
            for line in metrics.splitlines() if line.startswith("receiptgate_ledger_reads_total{")}


def check_read_standby(args, summary, credentials, load, failures):
    """The ledger read API answers from a standby (DATABASE_READ_URL), and /metrics shows its lag.
    Just after a failover the surviving standby may not stream from the new leader yet; it is then
    rightly skipped for the primary (the service counts why), so the read is asked again until the
    standby streams, for up to a minute: the service's count and the standby's own sessions agree."""
    acknowledged = next(a for a in load.answers if a[2] == 200)
    target = "/v1/transactions/app_store/" + acknowledged[4]["transaction"]["transaction_id"]
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=35)
    before = ledger_read_counts(args.port)
    outcome = {"status": None, "on_standby": False}

    def read_on_standby():
        counted = ledger_read_counts(args.port)
        outcome["status"], _ = read(connection, credentials["client_id"], credentials["client_secret"].encode(), target)
        served = ledger_read_counts(args.port).get('{served_by="standby"}', 0) > counted.get('{served_by="standby"}', 0)
        standbys = [m for m in members(summary) if m["role"] != "leader" and m["state"] in ("running", "streaming")]
        outcome["on_standby"] = outcome["status"] == 200 and served and any(receiptgate_sessions(summary, m) > 0 for m in standbys)
        return outcome["on_standby"]

    wait_for(read_on_standby, 60, 0.5)
    status, on_standby = outcome["status"], outcome["on_standby"]
    after = ledger_read_counts(args.port)
    metrics = http_get(args.port, "/metrics")[1]
    lag = next((line.split()[1] for line in metrics.splitlines() if line.startswith("receiptgate_db_read_standby_lag_seconds ")), None)
    if status != 200:
        failures.append(f"a ledger read of an acknowledged purchase answered {status}")
    if not on_standby:
        went = {label: after[label] - before.get(label, 0) for label in after if after[label] != before.get(label, 0)}
        failures.append(f"no ledger read served by a standby within 60 s (reads went: {went})")
    if lag is None:
        failures.append("/metrics has no receiptgate_db_read_standby_lag_seconds")
    return {"ledger_read_status": status, "ledger_read_from_standby": on_standby, "read_standby_lag_seconds": lag}


def claim_owned(args, credentials, failures):
    """Claims each non-consumable purchase of the corpus for a player of its own (the catalog maps
    the product to `season_pass`), before the load: the players whose entitlements are read."""
    with open(args.owned) as file:
        owned = [line.strip() for line in file if line.strip()]
    connection = http.client.HTTPConnection("127.0.0.1", args.port, timeout=35)
    players = []
    for index, token in enumerate(owned):
        player = f"reader-{index}"
        status, _ = verify(connection, credentials["client_id"], credentials["client_secret"].encode(), token, player=player)
        if status != 200:
            failures.append(f"claiming the season pass of {player} answered {status}")
        players.append(player)
    return players


def check_entitlement_reads(reads, served, killed, recovered, failures):
    """Entitlement reads ran beside the load: answered by the standby, and still answered (with
    the entitlement) while the primary failed over. `served`: where the service says the
    readers' reads went, by label."""
    statuses = {}
    for answer in reads.answers:
        statuses[str(answer[2])] = statuses.get(str(answer[2]), 0) + 1
    during = [a for a in reads.answers if a[0] >= killed and recovered is not None and a[1] <= recovered]
    answered_during = sum(1 for a in during if a[2] == 200)
    from_standby = served.get('{served_by="standby"}', 0)
    if not any(a[2] == 200 for a in reads.answers):
        failures.append("no entitlement read answered")
    if any(a[2] == 200 and not a[3] for a in reads.answers):
        failures.append("an entitlement read answered without the season pass its player owns")
    if answered_during == 0:
        failures.append("no entitlement read answered while the primary failed over")
    if from_standby == 0:
        failures.append("no entitlement read was served by the standby")
    return {"entitlement_reads": statuses, "entitlement_reads_answered_during_failover": f"{answered_during}/{len(during)}",
            "entitlement_reads_from_standby": from_standby, "entitlement_reads_served": served}


def check_rejoin(args, summary, leader, failures):
    restarted = time.monotonic()
    restart_node(args.dir, int(leader.removeprefix("node")))
    rejoined = wait_for(lambda: old_leader_rejoined(summary, leader), 120, 0.5)
    figures = {"old_leader_rejoined_seconds": round(time.monotonic() - restarted, 2) if rejoined else None}
    with open(os.path.join(args.dir, leader, "patroni.log"), errors="replace") as file:
        figures["old_leader_used_pg_rewind"] = "pg_rewind" in file.read()
    if not rejoined:
        failures.append(f"{leader} did not rejoin as a standby within 120 s")
    return figures


if __name__ == "__main__":
    main()
