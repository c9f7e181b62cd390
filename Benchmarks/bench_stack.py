"""One throwaway ReceiptGate stack for the benchmark scripts: its own PostgreSQL cluster (with
pg_stat_statements) on a Unix socket, `receiptgate serve` on it trusting the test root of
../shared/bench/make_corpus.py seed 1, and one client. Used by verify_profile.py and paired_runs.py.
"""
import glob, json, os, shutil, signal, subprocess, sys, tempfile, time, urllib.request

BENCH = os.environ.get("RECEIPTGATE_SHARED_BENCH", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "bench"))
sys.path.insert(0, BENCH)
from side_by_side import as_pg, free_port  # noqa: E402

# A fixed, published test key: these stacks hold nothing but generated purchases.
TEST_MASTER_KEY = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

# The PostgreSQL settings docs/operations.md recommends for a year's ledger (what the embedded
# cluster picks on a machine with 16 GB or more): the benchmarks' `--tuned`.
TUNED_PG_OPTIONS = ("-c shared_buffers=2GB -c effective_cache_size=8GB -c wal_compression=on -c max_wal_size=4GB "
                    "-c checkpoint_timeout=15min")


class Stack:
    def __init__(self, binary, label="receiptgate", explain=False, env=None, pg_options="", client_args=()):
        """`pg_options`: more `-c name=value` settings for the cluster; `client_args`: more options for
        `receiptgate client create` (e.g. a Google Play package name)."""
        self.binary, self.label, self.explain, self.extra_env = os.path.abspath(binary), label, explain, env or {}
        self.pg_options, self.client_args = pg_options, list(client_args)
        self.work = tempfile.mkdtemp(prefix=f"rg-{label}-")
        os.chmod(self.work, 0o777)
        self.pgbin = sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1]
        self.pgdata, self.pgport, self.port = os.path.join(self.work, "pg"), free_port(), free_port()
        self.db_url = f"postgresql://postgres@/postgres?host={self.work}&port={self.pgport}"
        self.proc = None

    def start(self):
        root = os.path.join(self.work, "pki")
        subprocess.run([sys.executable, os.path.join(BENCH, "make_corpus.py"), "--n", "1", "--seed", "1", "--out", root],
                       check=True, capture_output=True)
        r = as_pg(os.path.join(self.pgbin, "initdb"), "-D", self.pgdata, "--auth=trust", "-U", "postgres")
        if r.returncode:
            sys.exit("initdb failed: " + r.stderr[-300:])
        explain = (" -c session_preload_libraries=auto_explain -c auto_explain.log_min_duration=2"
                   " -c auto_explain.log_analyze=on -c auto_explain.log_timing=on") if self.explain else ""
        r = as_pg(os.path.join(self.pgbin, "pg_ctl"), "-D", self.pgdata, "-w", "-l", os.path.join(self.work, "pg.log"), "-o",
                  f"-p {self.pgport} -k {self.work} -c listen_addresses='' -c max_connections=300 "
                  "-c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all" + explain
                  + (" " + self.pg_options if self.pg_options else ""), "start")
        if r.returncode:
            sys.exit("pg_ctl start failed: " + r.stderr[-300:])
        self.env = dict(os.environ, DATABASE_URL=self.db_url, RECEIPTGATE_PORT=str(self.port), RECEIPTGATE_HOST="127.0.0.1",
                        RECEIPTGATE_DATA_DIR=os.path.join(self.work, "data"), RECEIPTGATE_LOG_LEVEL="info",
                        RECEIPTGATE_APPLE_ROOT_CERTS=os.path.join(root, "root.der"), RECEIPTGATE_MASTER_KEY=TEST_MASTER_KEY,
                        **self.extra_env)
        log = open(os.path.join(self.work, "serve.log"), "w")
        self.proc = subprocess.Popen([self.binary, "serve"], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        for _ in range(200):
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2).status == 200:
                    break
            except Exception:
                time.sleep(0.3)
        else:
            sys.exit(f"serve did not become healthy; see {log.name}")
        out = subprocess.run([self.binary, "client", "create", "--name", "bench", "--bundle-id", "vn.example.iapbench",
                              "--environments", "production,sandbox", *self.client_args], env=self.env, capture_output=True,
                             text=True, check=True)
        self.client = json.loads(out.stdout)
        self.psql("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        self.pidfile = os.path.join(self.work, "serve.pid")
        open(self.pidfile, "w").write(str(self.proc.pid))
        return self

    def psql(self, sql):
        r = as_pg(os.path.join(self.pgbin, "psql"), "-h", self.work, "-p", str(self.pgport), "-U", "postgres", "-d", "postgres",
                  "-At", "-F", "\t", "-c", sql)
        if r.returncode:
            sys.exit("psql failed: " + r.stderr[-400:])
        return [line.split("\t") for line in r.stdout.splitlines() if line]

    def load_command(self, connections=64):
        """e2e_load.py against this stack, CPU split over the service and its Postgres (add duration, requests...)."""
        return [sys.executable, os.path.join(BENCH, "e2e_load.py"), "--url", f"http://127.0.0.1:{self.port}/v1/verify",
                "--client-id", self.client["client_id"], "--secret", self.client["client_secret"], "--db-url", self.db_url,
                "--workdir", os.path.join(self.work, "load"), "--connections", str(connections), "--no-preflight",
                "--pidfile", self.pidfile, "--pidfile", os.path.join(self.pgdata, "postmaster.pid")]

    def warm_up(self, connections=64):
        """Chain cache, client cache and connections, before anything is counted."""
        subprocess.run(self.load_command(connections) + ["--duration", "2", "--requests", "3000"], check=False, capture_output=True)

    def stop(self, keep=False):
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        as_pg(os.path.join(self.pgbin, "pg_ctl"), "-D", self.pgdata, "-m", "fast", "stop")
        if keep:
            print(f"work folder of {self.label} kept: {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)
