#!/usr/bin/env bash
# Headless-browser check of the speedscope exporter: records a real program
# with the built lookback, converts the dump with `--to speedscope`, and loads
# the file into the real speedscope UI in headless Chromium
# (check_speedscope.mjs). Installs what is missing: Chromium from Debian (when
# root), the pinned npm packages from package-lock.json. Needs Node.js >= 20.
#
#   tests/browser/run.sh BUILD_DIR
#
# Artifacts (profile, screenshots) go to BUILD_DIR/tests/tmp/browser-speedscope/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: tests/browser/run.sh BUILD_DIR}" && pwd)
lookback=$build/lookback
program=$build/tests/programs/lifecycle-gcc
for f in "$lookback" "$program"; do
  [ -x "$f" ] || { echo "run.sh: $f not built (build the project first)" >&2; exit 1; }
done

as_root_apt() {
  if [ "$(id -u)" != 0 ]; then
    echo "run.sh: need the Debian packages $*; install them (as root: apt-get install $*)" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# The browser: the system Chromium, never one that Playwright downloads.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
if [ -z "${CHROMIUM:-}" ] && [ ! -x /usr/bin/chromium ]; then
  echo "== installing chromium"
  as_root_apt chromium
fi
# Node.js >= 20 (playwright-core's minimum; Debian 12's own nodejs is 18, so
# it comes with the machine, not from apt here).
if ! command -v npm >/dev/null || ! node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)'; then
  echo "run.sh: need Node.js >= 20 with npm (have: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

# The npm packages, exactly as locked; reinstalled when the lock changes.
if ! cmp -s "$here/package-lock.json" "$here/node_modules/.lookback-lock"; then
  echo "== npm ci"
  (cd "$here" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$here/package-lock.json" "$here/node_modules/.lookback-lock"
fi

out=$build/tests/tmp/browser-speedscope
rm -rf "$out"
mkdir -p "$out"
echo "== recording lifecycle-gcc exceptions"
"$lookback" record --dir "$out/dumps" -- "$program" exceptions >"$out/record.log" 2>&1 ||
  { cat "$out/record.log" >&2; exit 1; }
dumps=("$out"/dumps/*.lbk)
if [ "${#dumps[@]}" != 1 ] || [ ! -f "${dumps[0]}" ]; then
  echo "run.sh: expected one dump in $out/dumps" >&2
  exit 1
fi
"$lookback" convert "${dumps[0]}" --to speedscope -o "$out/profile.speedscope.json"

echo "== loading it in speedscope (headless chromium)"
node "$here/check_speedscope.mjs" "$out/profile.speedscope.json" "$out" --expect outer,middle,thrower,after_exceptions
