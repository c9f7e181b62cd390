#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test. The tests start
# their own PostgreSQL clusters under /tmp (as the `postgres` user when run as root) and stop them.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
swift build --build-tests
swift test --skip-build "$@"
