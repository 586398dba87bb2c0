#!/usr/bin/env bash
# Usage: bash scripts/sqliteAddonFor.sh NODE_DIR
#
# Prints the path of better-sqlite3's native addon (better_sqlite3.node) built for the
# Node.js in NODE_DIR (a directory with bin/node and include/node, as
# scripts/nodeFromRegistry.sh prints), from the sources of the better-sqlite3 that
# node_modules holds. An addon is tied to one Node ABI, so the one `npm ci` built for the
# machine's Node does not load in another major version. better-sqlite3's own install
# step would fetch a prebuilt binary, and node-gyp would fetch headers, from sites this
# machine cannot reach; here node-gyp (npm's own copy) compiles with NODE_DIR's headers,
# with g++, make and python3 (~70 s on 2 cores), into a cache keyed by both versions.
# node_modules is only read.
set -euo pipefail
cd "$(dirname "$0")/.."

node_dir=${1:-}
if [[ -z $node_dir || ! -x $node_dir/bin/node || ! -f $node_dir/include/node/node.h ]]; then
  echo "usage: sqliteAddonFor.sh NODE_DIR (with bin/node and include/node/node.h; got '$node_dir')" >&2
  exit 2
fi
node=$node_dir/bin/node
sources=node_modules/better-sqlite3
if [[ ! -f $sources/binding.gyp ]]; then
  echo "sqliteAddonFor.sh: no $sources/binding.gyp; run npm ci first" >&2
  exit 1
fi

sqlite_version=$("$node" -p 'require("./node_modules/better-sqlite3/package.json").version')
node_version=$("$node" --version)
cache=${CAIRN_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cairn/node}
addon=$cache/addons/better-sqlite3-$sqlite_version-node-$node_version-$(uname -m)/better_sqlite3.node

if [[ ! -f $addon ]]; then
  node_gyp=$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js
  if [[ ! -f $node_gyp ]]; then
    echo "sqliteAddonFor.sh: npm's node-gyp is not at $node_gyp" >&2
    exit 1
  fi
  build_dir=$(mktemp -d)
  trap 'rm -rf "$build_dir"' EXIT
  cp -r "$sources/binding.gyp" "$sources/deps" "$sources/src" "$sources/package.json" "$build_dir/"
  echo "building better-sqlite3 $sqlite_version for node $node_version" >&2
  # npm_config_* would reach node-gyp when this runs under an npm script; the machine's
  # npm sets nodedir to its own Node's headers, the wrong ones here.
  (cd "$build_dir" &&
    env -u npm_config_nodedir -u npm_config_target "$node" "$node_gyp" rebuild --release \
      --nodedir="$node_dir" --jobs=max >build.log 2>&1) || {
    tail -40 "$build_dir/build.log" >&2
    exit 1
  }
  # The build is proven by loading it in the Node it is for, before it enters the cache.
  "$node" -e 'require(process.argv[1])' "$build_dir/build/Release/better_sqlite3.node"
  mkdir -p "$(dirname "$addon")"
  partial=$(mktemp "$(dirname "$addon")/.partial.XXXXXX")
  cp "$build_dir/build/Release/better_sqlite3.node" "$partial"
  chmod 755 "$partial"
  mv "$partial" "$addon"
fi

echo "$addon"
