#!/usr/bin/env bash
# Installs the Debian packages lookback needs to build and test, if missing.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds stress-ng, for loaded benchmark runs)
# libzstd-dev: the Parquet writer's page compression (src/parquet/).
# libxxhash-dev: the JVM agent's class cache keys (src/frontends/jvm/class_cache.cc, header only).
# uftrace is the fidelity tests' independent oracle (tests/integration/fidelity_test.cc).
# openjdk-17-jdk-headless, libguava-java and libcommons-lang3-java: the JVM rewriter tests (tests/jvm) rewrite
# real classes and verify them with java -Xverify:all.
# groovy, clojure, jruby and ant: launcher scripts whose JVMs must be traced (tests/integration/launchers_test.cc).
set -euo pipefail
pkgs=(cmake ninja-build g++ clang pkg-config libgtest-dev libcli11-dev libfmt-dev libdw-dev libelf-dev libsqlite3-dev sqlite3 libzstd-dev libxxhash-dev protobuf-compiler time llvm-14-dev uftrace openjdk-17-jdk-headless libguava-java libcommons-lang3-java groovy clojure jruby ant)
[[ "${1:-}" == "--bench" ]] && pkgs+=(stress-ng)
missing=()
for p in "${pkgs[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == *"ok installed"* ]] || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0
echo "lookback: installing ${missing[*]}" >&2
if [[ $(id -u) -eq 0 ]]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
elif command -v sudo >/dev/null; then
  sudo apt-get update -qq
  sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "lookback: please install: apt-get install ${missing[*]}" >&2
  exit 1
fi
