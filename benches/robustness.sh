#!/usr/bin/env bash
# The robustness figures of docs/BENCHMARKS.md: hand-written lines and a garbage inbox.
# Run from the repository root after `cargo build --release`.
set -eu
D=${DREAM:-target/release/dream}
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
export GIT_CONFIG_GLOBAL=/dev/null HOME=$T
line() { printf -- '- Hand note %s: check the deployment pipeline logs every morning before standup.\n' "$1"; }
for n in 1000 4000 8000 50000; do
  for kind in distinct copies; do
    r=$T/$kind$n; $D init "$r" >/dev/null
    if [ $kind = distinct ]; then seq 1 $n | while read -r i; do line "$i"; done >> "$r/memory/human.md"
    else (yes -- "$(line x)" || true) | head -n $n >> "$r/memory/human.md"; fi
    /usr/bin/time -f "$n $kind lines ($(du -h "$r/memory/human.md" | cut -f1)): %e s, %M KB" $D --repo "$r" run --now 2026-11-02T21:00:00Z >/dev/null
    echo "  left: $(grep -c '^- Hand note' "$r/memory/human.md") lines"
  done
done
r=$T/garbage; $D init "$r" >/dev/null
head -c 400000000 /dev/urandom | base64 -w 100 > "$r/events/garbage.jsonl"
/usr/bin/time -f "400 MB of garbage lines: %e s, %M KB" $D --repo "$r" run --now 2026-11-02T21:00:00Z >/dev/null
head -c 400000000 /dev/urandom > "$r/events/binary.jsonl"
/usr/bin/time -f "400 MB of random bytes: %e s, %M KB" $D --repo "$r" run --now 2026-11-02T21:00:00Z >/dev/null
