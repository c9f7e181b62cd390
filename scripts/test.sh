#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test. The tests start
# their own PostgreSQL clusters under /tmp (as the `postgres` user when run as root) and stop them.
# Apple's official app-store-server-library (PyPI) is installed into .build/oracle-venv and used
# as the oracle of the App Store differential test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
oracle=.build/oracle-venv
if ! "$oracle/bin/python" -c "import appstoreserverlibrary" 2>/dev/null; then
    echo "test: installing app-store-server-library into $oracle" >&2
    python3 -m venv "$oracle"
    "$oracle/bin/pip" install --quiet --disable-pip-version-check "app-store-server-library==3.1.2" >&2
fi
export RECEIPTGATE_ORACLE_PYTHON="$PWD/$oracle/bin/python"
swift build --build-tests
swift test --skip-build "$@"
