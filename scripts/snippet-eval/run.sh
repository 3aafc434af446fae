#!/usr/bin/env bash
# Ingest a projects tree with one build and dump its automatic snippets for blind readers.
# usage: scripts/snippet-eval/run.sh GLEANER_BINARY TREE OUT
#   TREE holds TREE/projects/<folder>/<session>.jsonl (files aged a day or more, so every
#   session is finished); OUT gets data/ (a SQLite store), snippets.json, snippets.md and the
#   count of episodes by label on stdout.
set -euo pipefail
bin=$1 tree=$2 out=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out"; mkdir -p "$out/data"
export GLEANER_PROJECTS_DIR=$tree/projects GLEANER_DATA_DIR=$out/data GLEANER_ARCHIVE__ENABLED=false
"$bin" ingest > "$out/ingest.txt" 2>&1
"$bin" snippets --json --limit 500 > "$out/snippets.json"
python3 "$here/dump_snippets.py" "$out/snippets.json" "$out/snippets.md"
db=$(ls "$out"/data/*.db | head -1)
python3 -c "
import sqlite3; c=sqlite3.connect('$db')
print(dict(c.execute('select triage, count(*) from episodes group by triage').fetchall()))"
