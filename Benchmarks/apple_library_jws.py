"""Apple's app-store-server-library measured the way receiptgate-bench measures ReceiptGate.

    .build/release/receiptgate-bench jws --write-corpus /tmp/corpus --seconds 1
    .build/oracle-venv/bin/python Benchmarks/apple_library_jws.py /tmp/corpus [seconds]

Verifies every token of the corpus on one thread (online checks off, as in ReceiptGate's
default) and ends with `jws_verify_per_sec=<number>`.
"""
import sys
import time

from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

directory = sys.argv[1]
seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 5.0
tokens = [line.strip() for line in open(directory + "/tokens.txt") if line.strip()]
root = open(directory + "/root.der", "rb").read()
verifier = SignedDataVerifier([root], False, Environment.SANDBOX, "com.example.game")
for token in tokens:
    verifier.verify_and_decode_signed_transaction(token)

verified = 0
started = time.perf_counter()
deadline = started + seconds
while time.perf_counter() < deadline:
    for token in tokens:
        verifier.verify_and_decode_signed_transaction(token)
        verified += 1
elapsed = time.perf_counter() - started
print(f"verified={verified} seconds={elapsed:.2f} distinct_tokens={len(tokens)}")
print(f"jws_verify_per_sec={int(verified / elapsed)}")
