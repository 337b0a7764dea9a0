# Sourced by `run` and `test.sh` (bash): `ensure_installed` installs the
# packages of package-lock.json in the current folder with `npm ci` on first
# use, or when the lockfile changed since. The install is keyed by the
# lockfile's content (a stamp written after a successful `npm ci`), not by
# file times: npm itself may touch node_modules/.package-lock.json when the
# lockfile is regenerated. All npm output goes to stderr (stdout is the
# protocol channel for `run`).

STAMP=node_modules/.dshc-installed

lock_digest() {
  cksum <package-lock.json
}

needs_install() {
  [[ ! -f node_modules/.package-lock.json ]] ||
    [[ ! -f "$STAMP" ]] ||
    [[ "$(cat "$STAMP")" != "$(lock_digest)" ]]
}

install() {
  if ! command -v npm >/dev/null 2>&1; then
    echo "node-dsh: npm is not installed; the adapter needs Node.js >= 20 and npm" >&2
    exit 1
  fi
  echo "node-dsh: installing the pinned packages (npm ci)" >&2
  npm ci --no-audit --no-fund </dev/null >&2 2>&1
  lock_digest >"$STAMP"
}

ensure_installed() {
  if ! needs_install; then return; fi
  # Two adapters started at once on a fresh checkout must not run `npm ci`
  # over each other: the second waits, then finds the install done.
  if command -v flock >/dev/null 2>&1; then
    exec 9>.install.lock
    flock 9
    if needs_install; then install; fi
    flock -u 9
    exec 9>&-
  else
    local lock_dir=.install.lock.d
    for _ in $(seq 1 600); do
      if mkdir "$lock_dir" 2>/dev/null; then break; fi
      sleep 1
    done
    trap 'rmdir "$lock_dir" 2>/dev/null || true' EXIT
    if needs_install; then install; fi
    rmdir "$lock_dir" 2>/dev/null || true
    trap - EXIT
  fi
}
