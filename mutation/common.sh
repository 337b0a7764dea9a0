# shellcheck shell=bash
# What mutation/upstream and mutation/search share: StrykerJS itself, and the
# node-dsh adapter's own copy with one upstream package outside node_modules.
# Sourced; `here` and `repo` are the caller's.

# StrykerJS, pinned by mutation/package-lock.json, installed once per lock.
install_stryker() {
  local stamp="$here/node_modules/.dshc-installed"
  if [[ ! -f "$stamp" ]] || [[ "$(cat "$stamp")" != "$(cksum < "$here/package-lock.json")" ]]; then
    echo "mutation: installing StrykerJS (npm ci)" >&2
    (cd "$here" && npm ci --no-audit --no-fund < /dev/null >&2)
    cksum < "$here/package-lock.json" > "$stamp"
  fi
}

# adapter_copy PACKAGE WORK: a fresh copy of the node-dsh adapter in WORK
# with its own node_modules, where PACKAGE is moved out of node_modules
# (Stryker never mutates there) to WORK/under-test and linked back in its
# place.
adapter_copy() {
  local package="$1" work="$2" adapter="$repo/adapters/node-dsh"
  rm -rf "$work"
  mkdir -p "$work"
  cp "$adapter"/*.mjs "$adapter"/run "$adapter"/install.sh "$adapter"/package.json \
    "$adapter"/package-lock.json "$work/"
  (
    cd "$work"
    # shellcheck source=../adapters/node-dsh/install.sh
    source install.sh
    ensure_installed
  )
  mv "$work/node_modules/@deepseek-ai/$package" "$work/under-test"
  ln -s ../../under-test "$work/node_modules/@deepseek-ai/$package"
}
