#!/usr/bin/env bash
# Runs ReceiptGate: installs what is missing, builds a release binary, then `receiptgate serve`.
# With no DATABASE_URL it starts a private PostgreSQL cluster under RECEIPTGATE_DATA_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build -c release --product receiptgate
exec .build/release/receiptgate serve "$@"
