#!/usr/bin/env bash
# The archive's figures on a real-shaped tree: ingest (archive as written), pack, the SQLite
# file before and after VACUUM, and a restore of everything to another folder, checked
# byte for byte. Usage:
#   cargo build --release
#   cargo run --release --example bench -- --size-mb 1024 --work /tmp/gb --compare-only \
#       --baseline target/release/gleaner --rounds 1     # builds the tree in /tmp/gb/projects
#   scripts/archive-bench.sh /tmp/gb/projects [target/release/gleaner]
# The back-to-back throughput with the archive on and off is `bench --baseline` with a wrapper
# that sets GLEANER_ARCHIVE__ENABLED=false (README, "The archive"; figures in docs/benchmarks.md).
# DEFER=false in the environment frames idle transcripts as they are read (the pipeline before
# issue 48's deferred archiving), for a back-to-back comparison with one build; LEVEL=3 packs at
# another zstd level.
set -euo pipefail
tree=${1:?usage: archive-bench.sh TREE [GLEANER]}
bin=$(realpath "${2:-target/release/gleaner}")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g() {
  env -i PATH="$PATH" HOME="$work/home" XDG_DATA_HOME="$work/data" XDG_CONFIG_HOME="$work/cfg" \
    GLEANER_LOG__LEVEL=warn GLEANER_ARCHIVE__DEFER_FINISHED="${DEFER:-true}" \
    GLEANER_ARCHIVE__PACK_LEVEL="${LEVEL:-9}" "$bin" --projects-dir "$tree" --database-url "sqlite://$work/a.db" \
    --machine-id bench "$@"
}
export -f g
export work tree bin DEFER LEVEL
archive() { g doctor --json | python3 -c "import json,sys;[print('archive:', c['detail']) for c in json.load(sys.stdin) if c['check']=='archive']"; }
raw=$(du -sb "$tree" | cut -f1)
echo "tree: $raw bytes"
/usr/bin/time -f "ingest: %e s wall, CPU %U + %S s, peak RSS %M KB" bash -c 'g ingest > /dev/null'
archive
python3 -c "import sqlite3; c = sqlite3.connect('$work/a.db'); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.close()"
echo "database after ingest: $(stat -c %s "$work/a.db") bytes"
/usr/bin/time -f "pack: %e s wall, CPU %U + %S s, peak RSS %M KB" bash -c g\ pack
archive
echo "database after pack: $(stat -c %s "$work/a.db") bytes"
python3 -c "import sqlite3; c = sqlite3.connect('$work/a.db'); c.execute('VACUUM'); c.close()"
echo "database after VACUUM: $(stat -c %s "$work/a.db") bytes"
/usr/bin/time -f "restore: %e s wall, CPU %U + %S s, peak RSS %M KB" bash -c 'g restore --all --to "$work/restored" > /dev/null'
diff -r "$tree" "$work/restored" > /dev/null && echo "restored tree identical" || echo "RESTORED TREE DIFFERS"
