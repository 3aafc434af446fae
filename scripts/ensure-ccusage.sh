#!/usr/bin/env bash
# Install ccusage, pinned, for the usage test that compares Gleaner's figures with it, and print
# the path of its binary. Installed once into a cache folder (npm registry); Node.js and npm come
# from Debian's packages when missing.
#
# Why 20.0.24: the issue asks for ccusage 20; 20.0.26, the newest, ships no linux-x64 binary.
set -euo pipefail

VERSION=20.0.24
DIR=${GLEANER_CCUSAGE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/gleaner-test/ccusage-$VERSION}
BIN=$DIR/node_modules/.bin/ccusage

log() { echo "ensure-ccusage: $*" >&2; }

if [ -x "$BIN" ] && "$BIN" --version >/dev/null 2>&1; then
  echo "$BIN"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  log "installing Node.js and npm (Debian packages)"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >&2
fi
log "installing ccusage@$VERSION into $DIR"
mkdir -p "$DIR"
npm install --silent --no-audit --no-fund --prefix "$DIR" "ccusage@$VERSION" >&2
if ! "$BIN" --version >/dev/null 2>&1; then
  log "ccusage@$VERSION did not install a working binary at $BIN"
  exit 1
fi
echo "$BIN"
