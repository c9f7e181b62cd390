#!/usr/bin/env bash
# The long schema-driven run: schemathesis against Deploy/openapi.yaml and a running service with
# a real, signed client (the SchemaDriven test's setup), with many more generated requests per
# operation than the test suite's short run. No 5xx, every answer documented and matching.
#   scripts/schemathesis.sh          # 500 examples per operation and mode
#   scripts/schemathesis.sh 2000
set -euo pipefail
cd "$(dirname "$0")/.."
oracle=.build/oracle-venv
if ! "$oracle/bin/python" -c "import schemathesis" 2>/dev/null; then
    echo "schemathesis: not installed in $oracle; run scripts/test.sh once (it installs the checkers)" >&2
    exit 1
fi
swift build --build-tests
RECEIPTGATE_ORACLE_PYTHON="$PWD/$oracle/bin/python" RECEIPTGATE_SCHEMATHESIS_EXAMPLES="${1:-500}" \
    swift test --skip-build --filter SchemaDriven
