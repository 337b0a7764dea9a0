#!/usr/bin/env bash
# Test the node-dsh adapter on its own: install the pinned packages if they
# are missing or stale (as `run` does, install.sh), then `npm test`: the type
# check (tsc -p jsconfig.json) and the unit tests (node --test test/).
# Exits non-zero when either fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
# shellcheck source=install.sh
source ./install.sh
ensure_installed
exec npm test --silent
