#!/usr/bin/env bash
# Installs the pi oracle (../shared/oracle) and proves each of its three trees runs a real dump. An install that
# was cut short leaves its marker file behind with modules missing (ERR_MODULE_NOT_FOUND on every call), and
# setup.sh, which only checks the marker, would keep it forever: such a cache is removed and installed once more.
# Exit 0 when the oracle works, 1 when it cannot be installed (its tests then skip or fail with pi's own message).
set -uo pipefail
shared="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/shared}"
oracle="$shared/oracle/oracle.sh"
fixtures="$shared/fixtures"
home="${ORACLE_HOME:-$HOME/.cache/sessiontree-oracle}"
[ -f "$oracle" ] || { echo "no pi oracle at $oracle"; exit 1; }

works() {
  "$oracle" dump "$fixtures/pi-0.87.1/v4/branch-summary.jsonl" >/dev/null 2>&1 &&
    "$oracle" cli-dump "$fixtures/pi-cli-1.6.0/scenarios/branch-summary.jsonl" >/dev/null 2>&1 &&
    "$oracle" h083-dump "$fixtures/pi-core-0.83.0/scenarios/chat-tools.jsonl" >/dev/null 2>&1
}

works && exit 0
echo "the pi oracle in $home does not run: installing it again"
rm -rf "$home"
works && exit 0
echo "the pi oracle could not be installed in $home"
exit 1
