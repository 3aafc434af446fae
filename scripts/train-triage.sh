#!/usr/bin/env bash
# Retrain the learned triage and rewrite src/triage_model/weights.tsv, then print how it does
# against the rules by leave-source-out cross-validation and on the held-out labels.
# usage: scripts/train-triage.sh [MIRRORS] [-- triage_train options]
# MIRRORS: git snapshots of the labelled repositories (see scripts/labelling/restore-sources.sh);
# without them, an existing ../shared/corpus/external is checked and used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
mirrors=
if [ $# -gt 0 ] && [ "$1" != -- ]; then mirrors=$1; shift; fi
[ "${1:-}" = -- ] && shift
if [ -n "$mirrors" ]; then
  scripts/labelling/restore-sources.sh "$mirrors" ../shared/corpus/external
else
  scripts/labelling/verify-sources.sh ../shared/corpus/external
fi
exec cargo run --quiet --profile train --example triage_train -- --write "$@"
