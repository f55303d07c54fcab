#!/usr/bin/env bash
# Regenerates the comparison table in docs/seed-comparison.md from the shipped
# models: every hcsim figure there is computed by `hcsim reproduce`.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
table=$(./target/release/hcsim reproduce --markdown) || true
python3 - "$table" <<'PY'
import sys, pathlib
p = pathlib.Path("docs/seed-comparison.md")
doc = p.read_text()
a = doc.index("<!-- table:start -->\n") + len("<!-- table:start -->\n")
b = doc.index("<!-- table:end -->")
p.write_text(doc[:a] + sys.argv[1] + "\n" + doc[b:])
PY
echo "updated docs/seed-comparison.md"
