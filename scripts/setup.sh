#!/usr/bin/env bash
# Installs the Debian packages ReceiptGate builds and runs against, if any is missing.
# Safe to run again: it does nothing when everything is present.
#   libssl-dev                 OpenSSL 3 headers (Crypto)
#   libpq-dev                  libpq headers (Postgres)
#   libcurl4-openssl-dev       libcurl headers (HTTPClient)
#   libmicrohttpd-dev          GNU libmicrohttpd headers (HTTPServer)
#   libjemalloc-dev            jemalloc, the service's malloc (linked into receiptgate)
#   pkg-config                 how SwiftPM finds the four libraries above
#   postgresql                 initdb/pg_ctl/postgres for the embedded database and the tests
#   openssl                    the openssl command, used by tests as an independent cross-check
#   python3, python3-venv      runs Apple's app-store-server-library (from PyPI) as a test oracle, and the README's webhook receiver
#   curl                       a test runs the README's curl example against the service
#   nodejs                     runs a gateway client written from the seed's Node.js example (tests)
#   systemd                    systemd-analyze, which checks Deploy/receiptgate.service (tests)
#   podman, buildah, runc,     build and run the container image (Deploy/build-image.sh and its test);
#   mmdebstrap, uidmap, binutils   the image's root filesystem comes from Debian packages, nothing is pulled
#   etcd-server                the consensus store of the Patroni cluster in the failover drill (Deploy/ha/)
#   chromium                   the headless browser the operator console's browser test drives (Selenium, tests)
#   chromium-driver            chromedriver, through which Selenium drives that browser (nothing is downloaded at run time)
set -euo pipefail

packages=(libssl-dev libpq-dev libcurl4-openssl-dev libmicrohttpd-dev libjemalloc-dev pkg-config postgresql openssl python3 python3-venv curl nodejs systemd
          podman buildah runc mmdebstrap uidmap binutils etcd-server chromium chromium-driver)
missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done

if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup: missing Debian packages: ${missing[*]}; run this script as root or install them" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi
