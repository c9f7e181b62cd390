"""Signed POST /v1/verify load for the failover drill: each worker sends fresh StoreKit 2
purchases over its own keep-alive connection and records every answer. Standard library only."""
import hashlib
import hmac
import http.client
import http.server
import json
import threading
import time


class Load:
    """`connections` workers, each taking the next unused token, until `stop()`. After an answer
    other than 200 a worker waits briefly (as a client honouring Retry-After would), so an outage
    does not burn through the tokens."""

    def __init__(self, port, client_id, secret, tokens, connections=32):
        self.port, self.client_id, self.secret = port, client_id, secret.encode()
        self.tokens, self.next_token = tokens, 0
        self.lock = threading.Lock()
        self.answers = []  # (sent, received, status, token index, body or None)
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.worker, daemon=True) for _ in range(connections)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def take(self):
        with self.lock:
            if self.next_token >= len(self.tokens):
                return None
            self.next_token += 1
            return self.next_token - 1

    def worker(self):
        connection = None
        while not self.stopping.is_set():
            index = self.take()
            if index is None:
                return
            sent = time.monotonic()
            try:
                connection = connection or http.client.HTTPConnection("127.0.0.1", self.port, timeout=35)
                status, body = self.send(connection, self.tokens[index])
            except (OSError, http.client.HTTPException):
                connection, status, body = None, 0, None
            with self.lock:
                self.answers.append((sent, time.monotonic(), status, index, body))
            if status != 200:
                time.sleep(0.1)

    def send(self, connection, token):
        return verify(connection, self.client_id, self.secret, token)

    def count(self, status, after=0.0):
        with self.lock:
            return sum(1 for answer in self.answers if answer[2] == status and answer[0] >= after)


def verify(connection, client_id, secret, token, player=None):
    """One signed verification (claimed for `player` when given); returns (status, parsed body)."""
    fields = {"store": "app_store", "receipt": token}
    if player:
        fields["player_id"] = player
    body = json.dumps(fields).encode()
    timestamp = str(int(time.time()))
    digest = hashlib.sha256(body).hexdigest()
    signature = hmac.new(secret, f"{client_id}.{timestamp}.{digest}".encode(), hashlib.sha256).hexdigest()
    connection.request("POST", "/v1/verify", body=body, headers={
        "Content-Type": "application/json", "X-Client-ID": client_id, "X-Timestamp": timestamp,
        "X-Signature": signature})
    response = connection.getresponse()
    payload = response.read()
    parsed = None
    try:
        parsed = json.loads(payload)
    except ValueError:
        pass
    if response.status != 200 and response.getheader("Retry-After") is None and response.status == 503:
        parsed = {"missing_retry_after": True}
    return response.status, parsed


def read(connection, client_id, secret, target):
    """One signed ledger read (signature version 2: method, path and query); returns (status, body)."""
    timestamp = str(int(time.time()))
    message = f"v2\n{client_id}\n{timestamp}\nGET\n{target}\n{hashlib.sha256(b'').hexdigest()}"
    signature = hmac.new(secret, message.encode(), hashlib.sha256).hexdigest()
    connection.request("GET", target, headers={"X-Client-ID": client_id, "X-Timestamp": timestamp,
                                               "X-Signature": signature, "X-Signature-Version": "2"})
    response = connection.getresponse()
    return response.status, response.read()


class WebhookSink:
    """The game server's end of the webhooks: records the transaction id of every
    transaction.verified event it is sent, and acknowledges it."""

    def __init__(self, port):
        self.lock, self.transaction_ids = threading.Lock(), set()
        sink = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                event = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if event.get("type") == "transaction.verified":
                    with sink.lock:
                        sink.transaction_ids.add(event["data"]["transaction"]["transaction_id"])
                self.send_response(200)
                self.end_headers()

            def log_message(self, *arguments):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def delivered(self, ids):
        with self.lock:
            return len(ids & self.transaction_ids)



class EntitlementReads:
    """`connections` workers reading what random players own (GET /v1/players/{id}/entitlements)
    until `stop()`, each answer recorded as (sent, received, status, owns `entitlement`)."""

    def __init__(self, port, client_id, secret, players, entitlement, connections=4):
        self.port, self.client_id, self.secret = port, client_id, secret.encode()
        self.players, self.entitlement = players, entitlement
        self.lock = threading.Lock()
        self.answers = []
        self.stopping = threading.Event()
        self.threads = [threading.Thread(target=self.worker, args=(index,), daemon=True) for index in range(connections)]

    def start(self):
        for thread in self.threads:
            thread.start()

    def stop(self):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=30)

    def worker(self, index):
        connection, turn = None, index
        while not self.stopping.is_set():
            player = self.players[turn % len(self.players)]
            turn += len(self.threads)
            sent = time.monotonic()
            try:
                connection = connection or http.client.HTTPConnection("127.0.0.1", self.port, timeout=35)
                status, body = read(connection, self.client_id, self.secret, f"/v1/players/{player}/entitlements")
                owns = status == 200 and any(e.get("entitlement") == self.entitlement for e in json.loads(body)["entitlements"])
            except (OSError, http.client.HTTPException, ValueError, KeyError):
                connection, status, owns = None, 0, False
            with self.lock:
                self.answers.append((sent, time.monotonic(), status, owns))
            if status != 200:
                time.sleep(0.05)
