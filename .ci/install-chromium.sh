#!/usr/bin/env bash
# Headless Chromium from Debian's packages, for the HTML report's browser
# test (harness/cli/tests/it/report_page.rs). Does nothing when it is there.
set -euo pipefail
if command -v chromium > /dev/null; then
  exit 0
fi
sudo_if_needed() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
sudo_if_needed apt-get update
sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
command -v chromium > /dev/null
