#!/usr/bin/env bash
# The project's test command (README, "The two commands"): format, lints, and every test on both
# backends. PostgreSQL is started (or installed) first when it is not running; each test creates
# and drops its own fresh database, so runs never collide.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "test: cargo not found (install Rust with rustup)" >&2
  exit 1
fi

# The real transcripts corpus lives beside the project's main checkout (../shared/corpus/real).
# A clone made elsewhere (CI, a temporary folder) finds it through its origin when that is a
# local checkout. The tests fail, never skip, without it.
if [ -z "${GLEANER_CORPUS_DIR:-}" ]; then
  for base in "$PWD/.." "$(git config --get remote.origin.url 2>/dev/null || true)/.."; do
    if [ -d "$base/shared/corpus/real" ]; then
      GLEANER_CORPUS_DIR=$(cd "$base/shared/corpus/real" && pwd)
      break
    fi
  done
fi
if [ -z "${GLEANER_CORPUS_DIR:-}" ]; then
  echo "test: real corpus not found: set GLEANER_CORPUS_DIR (expected ../shared/corpus/real)" >&2
  exit 1
fi
export GLEANER_CORPUS_DIR

GLEANER_TEST_PG_URL=${GLEANER_TEST_PG_URL:-$(scripts/ensure-postgres.sh)}
export GLEANER_TEST_PG_URL

# The usage test compares Gleaner's figures with ccusage's on the corpus (pinned version, npm).
GLEANER_TEST_CCUSAGE=${GLEANER_TEST_CCUSAGE:-$(scripts/ensure-ccusage.sh)}
export GLEANER_TEST_CCUSAGE

# The web view's browser test drives a real headless Chromium (Debian package `chromium`).
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  echo "test: installing chromium for the web view's browser test" >&2
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  # An install cut short before (a run killed while apt ran) leaves dpkg waiting: finish it.
  DEBIAN_FRONTEND=noninteractive $SUDO dpkg --configure -a >&2 || true
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >&2
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --quiet -- -D warnings
echo "== cargo test (SQLite and PostgreSQL at ${GLEANER_TEST_PG_URL%/*})"
# The last line sums every test binary (cargo's own last line is the last binary's, often an
# empty target's "0 passed", which reads as a run that tested nothing).
log=$(mktemp)
trap 'rm -f "$log"' EXIT
status=0
cargo test --all-targets --quiet "$@" 2>&1 | tee "$log" || status=$?
awk '/^test result:/ {
       for (i = 1; i <= NF; i++) {
         if ($(i + 1) ~ /^passed/) p += $i
         if ($(i + 1) ~ /^failed/) f += $i
       }
     }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
exit "$status"
