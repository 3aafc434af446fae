#!/usr/bin/env bash
# Check a copy of the external labelled transcripts against tests/fixtures/external/sources.tsv:
# every file present, byte for byte the git blob recorded for its repository and commit.
# usage: scripts/labelling/verify-sources.sh [DIR]   (default ../shared/corpus/external)
# The transcripts are not committed (people's sessions from public repositories); each row names
# the repository, path and commit to take them from again (`git show COMMIT:PATH`).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-../shared/corpus/external}
sources=tests/fixtures/external/sources.tsv
ok=0 bad=0
while IFS=$'\t' read -r repo path commit blob bytes turns; do
  [ "$repo" = repo ] && continue
  f="$dir/${repo/\//__}/$path"
  if [ -f "$f" ] && [ "$(git hash-object "$f")" = "$blob" ]; then
    ok=$((ok + 1))
  else
    echo "missing or different: $repo $path ($commit)" >&2
    bad=$((bad + 1))
  fi
done < "$sources"
echo "$ok files as recorded, $bad missing or different"
[ "$bad" -eq 0 ]
