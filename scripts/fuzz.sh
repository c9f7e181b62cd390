#!/usr/bin/env bash
# Builds the libFuzzer harnesses in Fuzz/ (a package of its own, so the normal build never sees
# them) with the fuzzer and address sanitizers, then runs each harness for [seconds] (default 60)
# starting from its committed seed corpus, Fuzz/Corpus/<harness>. New inputs go to a working
# corpus under Fuzz/.build/corpus/<harness>, crashing inputs to Fuzz/.build/crashes/<harness>/.
# Exits non-zero if any harness crashed (or failed to run); prints one summary line per harness.
#   scripts/fuzz.sh            # 60 s each
#   scripts/fuzz.sh 3600       # an hour each
#   FUZZ_HARNESSES="jws receipt" scripts/fuzz.sh 30
set -uo pipefail
seconds=${1:-60}
cd "$(dirname "$0")/../Fuzz"
# SwiftPM links libFuzzer for the harness; -Xswiftc instruments every module (the package's too) for coverage.
flags=(-c debug --sanitize fuzzer --sanitize address -Xswiftc -sanitize=fuzzer,address)
swift build "${flags[@]}" 2>&1 | grep -E "error|Compiling receiptgate_fuzz|Build complete" || true
bin="$(swift build "${flags[@]}" --show-bin-path)/receiptgate-fuzz"
[ -x "$bin" ] || { echo "fuzz: build failed" >&2; exit 1; }

status=0
for harness in ${FUZZ_HARNESSES:-jws receipt alogame native}; do
    work=.build/corpus/$harness crashes=.build/crashes/$harness
    mkdir -p "$work" "$crashes"
    log=.build/fuzz-$harness.log
    # Leak checking is off: the Swift runtime's one-time allocations read as leaks; ASan's
    # memory-error checks (overflow, use after free) stay on.
    FUZZ_HARNESS=$harness ASAN_OPTIONS=detect_leaks=0 "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 \
        -max_len=65536 -artifact_prefix="$crashes/" -print_final_stats=1 "$work" "Corpus/$harness" >"$log" 2>&1
    code=$?
    runs=$(grep -E "^stat::number_of_executed_units" "$log" | awk '{print $2}')
    found=$(ls "$crashes" | wc -l)
    echo "fuzz: $harness: exit $code, ${runs:-?} inputs in ${seconds}s, $found crash file(s) (log $PWD/$log)"
    [ "$code" -eq 0 ] && [ "$found" -eq 0 ] || status=1
done
exit $status
