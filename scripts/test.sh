#!/usr/bin/env bash
# The project's test command (README "Run the tests"): format, lints, and every test on both
# backends. PostgreSQL is started (or installed) first when it is not running; each test creates
# and drops its own fresh database, so runs never collide.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  echo "test: cargo not found (install Rust with rustup)" >&2
  exit 1
fi

GLEANER_TEST_PG_URL=${GLEANER_TEST_PG_URL:-$(scripts/ensure-postgres.sh)}
export GLEANER_TEST_PG_URL

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --all-targets --quiet -- -D warnings
echo "== cargo test (SQLite and PostgreSQL at ${GLEANER_TEST_PG_URL%/*})"
cargo test --all-targets --quiet "$@"
