#!/usr/bin/env bash
# Usage: bash scripts/runOnNode.sh VERSION COMMAND [ARG...]
#   e.g. bash scripts/runOnNode.sh 24.22.3 npx vitest run test/local
#
# Runs COMMAND on Node.js VERSION from the npm registry (scripts/nodeFromRegistry.sh):
# that node is first on PATH, so npm, npx and every `node` they start are it, and tests'
# children started with process.execPath are too. For as long as COMMAND runs,
# node_modules' better-sqlite3 addon is one built for VERSION (scripts/sqliteAddonFor.sh);
# the machine's Node cannot load that one, so the addon `npm ci` built is put back when
# COMMAND ends, however it ends. Meanwhile no process on the machine's Node can open
# SQLite from this work tree: run it where no other test is running.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
if [[ -z $version || $# -lt 2 ]]; then
  echo "usage: runOnNode.sh VERSION COMMAND [ARG...]" >&2
  exit 2
fi
shift

node_dir=$(bash scripts/nodeFromRegistry.sh "$version")
addon=$(bash scripts/sqliteAddonFor.sh "$node_dir")

installed=node_modules/better-sqlite3/build/Release/better_sqlite3.node
kept=$installed.machine-node
# A run that was killed outright (SIGKILL) left the machine's addon aside: put it back first.
if [[ -f $kept ]]; then
  mv -f "$kept" "$installed"
fi

restore() {
  # A second Ctrl-C or TERM while putting the addon back would leave it out.
  trap '' INT TERM
  if [[ -f $kept ]]; then
    mv -f "$kept" "$installed"
  fi
}
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Renames, not copies over: the addon file is a hard link of node-gyp's build output, and
# a process already running keeps the file it loaded.
mv "$installed" "$kept"
cp "$addon" "$installed.incoming"
mv "$installed.incoming" "$installed"

export PATH=$node_dir/bin:$PATH
echo "running on node $(node --version) ($(command -v node)): $*"
status=0
"$@" || status=$?
exit "$status"
