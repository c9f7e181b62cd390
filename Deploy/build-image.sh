#!/usr/bin/env bash
# Builds the container image localhost/receiptgate:<version> (and :latest) without pulling anything:
# the release binary (Swift standard library linked in statically), on a Debian 12 root
# filesystem made by mmdebstrap from runtime-packages.txt, run as the non-root user receiptgate
# (uid 10001), with a HEALTHCHECK on /healthz. Prints the image's name and size as its last line.
#
#   Deploy/build-image.sh        (RECEIPTGATE_IMAGE_SKIP_BUILD=1 reuses .build/release/receiptgate)
set -euo pipefail
cd "$(dirname "$0")/.."
# Docker's image format: the OCI format has no HEALTHCHECK.
export BUILDAH_FORMAT=docker

packages=(podman buildah runc mmdebstrap uidmap binutils)
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "build-image: missing Debian packages: ${missing[*]}" >&2; exit 1; }
    echo "build-image: installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -q >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
fi

version=$(sed -n 's/.*static let current = "\(.*\)".*/\1/p' Sources/ReceiptGate/Storage/Database.swift)
[ -n "$version" ] || { echo "build-image: cannot read the version" >&2; exit 1; }
if [ -z "${RECEIPTGATE_IMAGE_SKIP_BUILD:-}" ]; then
    swift build -c release --product receiptgate --static-swift-stdlib >&2
fi
binary=.build/release/receiptgate
[ -x "$binary" ] || { echo "build-image: $binary is missing" >&2; exit 1; }

work=$(mktemp -d /tmp/receiptgate-image.XXXXXX)
container=
cleanup() {
    [ -z "$container" ] || buildah rm "$container" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# The essential variant keeps dpkg, so the packages' own scripts run (ca-certificates builds its
# bundle); apt, documentation and caches are left out of the image. The merged-usr hook makes
# /usr merged with symlinks, without the usrmerge package and the Perl it would bring (50 MB).
include=$(grep -v '^#' Deploy/runtime-packages.txt | paste -sd, -)
# Downloads from the Debian mirror fail now and then (a dropped connection, a mirror mid-sync,
# which can last minutes): up to five tries, each starting over, waiting longer each time.
for attempt in 1 2 3 4 5; do
    rm -f "$work/rootfs.tar"
    if mmdebstrap --quiet --variant=essential --include="$include" --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
        --customize-hook='echo "receiptgate:x:10001:10001:ReceiptGate:/var/lib/receiptgate:/usr/sbin/nologin" >>"$1/etc/passwd"' \
        --customize-hook='echo "receiptgate:x:10001:" >>"$1/etc/group"' \
        --customize-hook='mkdir -p "$1/var/lib/receiptgate" && chown 10001:10001 "$1/var/lib/receiptgate" && chmod 0700 "$1/var/lib/receiptgate"' \
        --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/var/log/*' \
        bookworm "$work/rootfs.tar" >&2; then
        break
    fi
    [ "$attempt" -lt 5 ] || { echo "build-image: mmdebstrap failed five times" >&2; exit 1; }
    echo "build-image: mmdebstrap failed (attempt $attempt); trying again in $((attempt * attempt * 10)) s" >&2
    sleep $((attempt * attempt * 10))
done

container=$(buildah from scratch)
buildah add --quiet "$container" "$work/rootfs.tar" / >&2
# Symbols are most of the binary's size; a crash report still names functions via the Swift runtime.
strip -o "$work/receiptgate" "$binary"
buildah copy --quiet --chmod 0755 "$container" "$work/receiptgate" /usr/local/bin/receiptgate >&2
buildah copy --quiet --chmod 0644 "$container" Deploy/openapi.yaml /usr/share/receiptgate/openapi.yaml >&2
buildah config --user receiptgate:receiptgate --workingdir /var/lib/receiptgate \
    --env RECEIPTGATE_HOST=0.0.0.0 --env RECEIPTGATE_DATA_DIR=/var/lib/receiptgate \
    --env RECEIPTGATE_OPENAPI_PATH=/usr/share/receiptgate/openapi.yaml \
    --port 8080 --entrypoint '["/usr/local/bin/receiptgate"]' --cmd serve \
    --healthcheck 'CMD-SHELL curl -fsS -o /dev/null http://127.0.0.1:${RECEIPTGATE_PORT:-8080}/healthz' \
    --healthcheck-interval 10s --healthcheck-timeout 3s --healthcheck-retries 3 \
    --label org.opencontainers.image.title=receiptgate --label org.opencontainers.image.version="$version" \
    "$container" >&2
buildah commit --quiet --format docker --rm "$container" "localhost/receiptgate:$version" >&2
container=
buildah tag "localhost/receiptgate:$version" localhost/receiptgate:latest
size=$(podman image inspect --format '{{.Size}}' "localhost/receiptgate:$version")
echo "localhost/receiptgate:$version $((size / 1000000)) MB"
