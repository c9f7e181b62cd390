#!/usr/bin/env python3
"""Writes the seed corpora (Fuzz/Corpus/<harness>/) from the repository's real fixtures: Apple's
sandbox StoreKit 2 transaction and StoreKit 1 receipt, plus request bodies as the tests send them.
Run from anywhere; rerun after a fixture changes. Standard library only."""
import base64, json, pathlib, subprocess, tempfile

here = pathlib.Path(__file__).resolve().parent
fixtures = here.parent / "Tests/AppStoreTests/Fixtures"
corpus = here / "Corpus"


def write(harness, name, data):
    folder = corpus / harness
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# StoreKit 2: the real token, and variants that stop at each stage of the verifier.
jws = (fixtures / "real-sandbox-transaction.jws").read_text().strip()
header, payload, signature = jws.split(".")
write("jws", "real-sandbox-transaction", jws)
write("jws", "two-parts", f"{header}.{payload}")
write("jws", "empty-signature", f"{header}.{payload}.")
write("jws", "payload-not-object", f"{header}.{b64url(b'[1,2]')}.{signature}")
head = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))
write("jws", "one-certificate", f"{b64url(json.dumps(dict(head, x5c=head['x5c'][:1])).encode())}.{payload}.{signature}")
write("jws", "alg-none", f"{b64url(json.dumps(dict(head, alg='none')).encode())}.{payload}.{signature}")
body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
write("jws", "signed-date-far", f"{header}.{b64url(json.dumps(dict(body, signedDate=1e300)).encode())}.{signature}")
# The payload alone: the harness also compares the hand-written payload decoding with JSONDecoder.
write("jws", "real-sandbox-payload.json", base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))

# StoreKit 1: the real container (DER), its signed content, one purchase attribute set.
der = base64.b64decode((fixtures / "real-sandbox-receipt.b64").read_text())
write("receipt", "real-sandbox-receipt.der", der)
with tempfile.TemporaryDirectory() as tmp:
    source, content = pathlib.Path(tmp, "r.der"), pathlib.Path(tmp, "content")
    source.write_bytes(der)
    subprocess.run(["openssl", "cms", "-verify", "-noverify", "-inform", "DER", "-in", str(source), "-out", str(content)],
                   check=True, capture_output=True)
    write("receipt", "real-sandbox-content.der", content.read_bytes())


def tlv(tag, value):
    length = len(value)
    encoded = bytes([length]) if length < 0x80 else bytes([0x81, length]) if length < 0x100 else bytes([0x82, length >> 8, length & 0xFF])
    return bytes([tag]) + encoded + value


def attribute(kind, value):
    return tlv(0x30, tlv(0x02, kind.to_bytes(2, "big")) + tlv(0x02, b"\x01") + tlv(0x04, value))


purchase = tlv(0x31, attribute(1702, tlv(0x0C, b"gems100")) + attribute(1703, tlv(0x0C, b"2000000000000777"))
                  + attribute(1704, tlv(0x16, b"2025-10-16T06:51:26Z")) + attribute(1701, tlv(0x02, b"\x01")))
write("receipt", "minimal-payload.der", tlv(0x31, attribute(2, tlv(0x0C, b"com.example.game")) + attribute(12, tlv(0x16, b"2025-10-16T06:51:26Z"))
                                                 + attribute(17, purchase)))

# Dialect bodies, as game servers send them.
alogame = [
    {"receipt": "jws-777", "product_id": "gems100", "os_id": 2, "player_id": "p1", "character_id": "c", "server_id": "s", "game_version": "1.0"},
    {"receipt": "jws-bad", "product_id": "gems100", "os_id": 2},
    {"receipt": jws[:64], "product_id": "gems100", "os_id": 1},
    {"order_id": "MQ5VLT9VXT"},
    {"receipt": None, "os_id": "2"},
]
for index, item in enumerate(alogame):
    write("alogame", f"body-{index}.json", json.dumps(item))
native = [
    {"store": "app_store", "receipt": jws[:64], "product_id": "gems100", "player_id": "p", "character_id": "c", "server_id": "s",
     "game_version": "1.0", "restore": False, "app_account_token": "1b2d0ac5-6e5a-4f0e-9a5e-0e7f1f1c2d3e"},
    {"store": "google_play", "receipt": "token", "app_account_token": "not-a-uuid"},
    {"store": "", "receipt": ""},
    {"store": "app_store", "receipt": ["x"], "restore": "yes"},
]
for index, item in enumerate(native):
    write("native", f"body-{index}.json", json.dumps(item))
print("wrote", sum(1 for _ in corpus.rglob("*") if _.is_file()), "seeds under", corpus)
