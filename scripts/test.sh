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
    if ! "$oracle/bin/pip" install --quiet --disable-pip-version-check "app-store-server-library==3.1.2" >&2; then
        # CI must run the oracle; elsewhere (no route to PyPI) the differential test is skipped.
        if [ -n "${CI:-}" ]; then echo "test: cannot install the oracle from PyPI" >&2; exit 1; fi
        echo "test: WARNING: PyPI unreachable; the App Store differential test will be skipped" >&2
    fi
fi
if "$oracle/bin/python" -c "import appstoreserverlibrary" 2>/dev/null; then
    export RECEIPTGATE_ORACLE_PYTHON="$PWD/$oracle/bin/python"
fi
swift build --build-tests
swift test --skip-build "$@"
