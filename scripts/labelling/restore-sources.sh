#!/usr/bin/env bash
# Rebuild the external labelled transcripts from git snapshots of their repositories, byte for
# byte, by the blob each row of tests/fixtures/external/sources.tsv records.
# usage: scripts/labelling/restore-sources.sh [MIRRORS] [OUT]
#   MIRRORS: a folder holding one git directory per repository, as `owner+name/repo`
#            (what the project's `fetch` tool writes; default ../.mirror), or `owner+name.git`
#            (what `git clone --bare https://github.com/owner/name owner+name.git` writes);
#   OUT:     where the transcripts go, as OUT/owner__name/PATH (default ../shared/corpus/external).
# A blob missing from its snapshot is named; the exit code is 1 when any is.
set -euo pipefail
cd "$(dirname "$0")/../.."
mirrors=${1:-../.mirror}
out=${2:-../shared/corpus/external}
ok=0 bad=0
while IFS=$'\t' read -r repo path commit blob bytes turns; do
  [ "$repo" = repo ] && continue
  git_dir="$mirrors/${repo/\//+}/repo"
  [ -d "$git_dir/.git" ] && git_dir="$git_dir/.git"
  [ -d "$git_dir" ] || git_dir="$mirrors/${repo/\//+}.git"
  f="$out/${repo/\//__}/$path"
  mkdir -p "$(dirname "$f")"
  if git --git-dir="$git_dir" cat-file blob "$blob" >"$f.part" 2>/dev/null; then
    mv "$f.part" "$f"
    ok=$((ok + 1))
  else
    rm -f "$f.part"
    echo "not in $git_dir: $repo $path ($commit, blob $blob)" >&2
    bad=$((bad + 1))
  fi
done <tests/fixtures/external/sources.tsv
echo "$ok files restored, $bad missing"
[ "$bad" -eq 0 ]
