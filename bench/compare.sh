#!/usr/bin/env bash
# Side-by-side comparison of lookback with the other function tracers on this
# machine, in one command (docs/comparisons.md):
#
#   bench/compare.sh [--rounds N] [--programs sqlite,lua] [--no-listing1]
#                    [--no-uftrace] [--quick] [--jobs N] [--raw DIR]
#                    [--build DIR] [--work DIR] [--rebuild] [--build-only]
#
# 1. Builds the Listing 1 benchmark and the drivers (cmake target
#    listing1_bench in --build, default /tmp/bench-build) and runs
#    listing1_driver at work 0 and 100: uninstrumented, glibc's no-op hooks,
#    lookback off/on, the floor hook, uftrace record, gprof, XRay (unpatched
#    and FDR), gcc and clang, interleaved.
# 2. Fetches real programs as Debian source packages (bookworm; a deb-src
#    entry is added under /etc/apt/sources.list.d if apt has none, which needs
#    root), into --work (default /tmp/lookback-compare; reruns reuse it):
#      sqlite  sqlite3's test/speedtest1.c on the amalgamation, in memory
#      lua     the lua5.4 interpreter running bench/compare/bench.lua
# 3. Builds each with gcc (-O2 -finstrument-functions) and clang (-O2
#    -finstrument-functions-after-inlining): uninstrumented, the instrumented
#    object linked with nothing (glibc's no-op hooks), liblookback.so or the
#    floor hook, -pg (gprof and uftrace), -fxray-instrument (clang), and the
#    lookback clang pass (-fpass-plugin, linked with liblookback.so), into
#    --work/bin/<program>_<compiler>_<variant> (--build-only stops here:
#    bench/budget_native.sh runs them its own way).
# 4. Runs them with compare_driver, interleaved rounds, and prints tables of
#    medians: wall time, trace points, ns per trace point, lookback's added time
#    over the floor hook's (goal <= 1.2), bytes written.
#
# Everything is run under `nice`. A full run takes about 6 minutes on a
# shared 2-vCPU VM once the programs are built; the first run also fetches
# and builds them (about 6 more minutes there). --raw DIR keeps every run's
# figures as CSV (listing1.csv, programs.csv).
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build=/tmp/bench-build
work=/tmp/lookback-compare
rounds=7
programs=sqlite,lua
listing1=1
uftrace_flag=()
quick=0
njobs=2
raw=""
rebuild=0
build_only=0

usage() { sed -n '2,33p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --programs) programs=$2; shift 2 ;;
    --no-listing1) listing1=0; shift ;;
    --no-uftrace) uftrace_flag=(--no-uftrace); shift ;;
    --quick) quick=1; rounds=1; shift ;;
    --jobs) njobs=$2; shift 2 ;;
    --raw) raw=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --rebuild) rebuild=1; shift ;;
    --build-only) build_only=1; listing1=0; shift ;;
    -h|--help) usage ;;
    *) echo "compare.sh: unknown option $1" >&2; usage ;;
  esac
done

# Workload sizes: 0.1-0.4 s uninstrumented, 5-10 s under uftrace, on the reference VM.
sqlite_size=10
lua_repeats=10
if [[ $quick == 1 ]]; then sqlite_size=2; lua_repeats=2; fi

log() { echo "compare.sh: $*" >&2; }
die() { echo "compare.sh: $*" >&2; exit 1; }
N() { nice -n 10 "$@"; }

mkdir -p "$work"
[[ -n "$raw" ]] && mkdir -p "$raw"

# ---- 1. the project's side: hook libraries, Listing 1, drivers ---------------
N "$src/bench/configure.sh" "$build"
N cmake --build "$build" --target listing1_bench >&2
lb_so="$build/liblookback.so"
floor_so="$build/bench/liblisting1_floor.so"
[[ -f "$lb_so" && -f "$floor_so" ]] || die "missing $lb_so or $floor_so"

have() { command -v "$1" >/dev/null 2>&1; }
have gcc || die "gcc not found"
have_clang=0; have clang && have clang++ && have_clang=1
have_xray=0
pass_so="$build/lib/liblookback-pass.so"
have_pass=0
if [[ $have_clang == 1 && -f "$pass_so" ]]; then
  N cmake --build "$build" --target lookback_pass >&2
  have_pass=1
fi
if [[ $have_clang == 1 ]] && echo 'int main(){return 0;}' | clang -x c - -fxray-instrument -o "$work/.xray_probe" 2>/dev/null; then
  have_xray=1
fi

# ---- machine ---------------------------------------------------------------------
{
  echo "# bench/compare.sh, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo '?')" \
    "$(git -C "$src" diff --quiet HEAD -- src include bench 2>/dev/null || echo '(uncommitted changes in src/, include/ or bench/)')"
  echo
  echo "- CPU: $(nproc) x $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), kernel $(uname -r)," \
    "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo '?')"
  tsc_flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(constant_tsc|nonstop_tsc|tsc_known_freq|rdtscp)$' | xargs || true)
  echo "- TSC: cpuinfo flags [$tsc_flags]; rdtscp $(grep -qw rdtscp /proc/cpuinfo && echo advertised || echo 'NOT advertised');" \
    "/sys/devices/system/cpu/cpu0/tsc_freq_khz $( [[ -r /sys/devices/system/cpu/cpu0/tsc_freq_khz ]] && cat /sys/devices/system/cpu/cpu0/tsc_freq_khz || echo 'absent')"
  echo "- $(gcc --version | head -1); $( [[ $have_clang == 1 ]] && clang --version | head -1 || echo 'no clang');" \
    "$(have uftrace && uftrace --version 2>/dev/null | head -1 || echo 'no uftrace'); XRay runtime: $( [[ $have_xray == 1 ]] && echo yes || echo no)"
  echo "- load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
  echo
} | tee "$work/header.txt"

# ---- 2. Listing 1 ------------------------------------------------------------------
if [[ $listing1 == 1 ]]; then
  log "Listing 1 (listing1_driver), $rounds rounds"
  l1_args=(--rounds "$rounds" --work "0,100" --no-first-lap "${uftrace_flag[@]}")
  [[ $quick == 1 ]] && l1_args=(--quick --work "0,100" "${uftrace_flag[@]}")
  [[ -n "$raw" ]] && l1_args+=(--raw "$raw/listing1.csv")
  echo "## Listing 1"
  echo
  N "$build/bench/listing1_driver" "${l1_args[@]}"
  echo
fi

# ---- 3. sources ------------------------------------------------------------------------
[[ -n "$programs" ]] || exit 0
IFS=, read -r -a progs <<<"$programs"
declare -A srcpkg=([sqlite]=sqlite3 [lua]=lua5.4)
for p in "${progs[@]}"; do [[ -n "${srcpkg[$p]:-}" ]] || die "unknown program '$p' (sqlite, lua)"; done

mkdir -p "$work/src"
fetch() {  # source package -> prints the unpacked directory
  local pkg=$1 dir
  dir=$(find "$work/src" -maxdepth 1 -type d -name "$pkg-[0-9]*" | sort | tail -n 1)
  if [[ -z "$dir" ]]; then
    if ! apt-cache showsrc "$pkg" 2>/dev/null | grep -q '^Package:'; then
      [[ $(id -u) == 0 ]] || die "apt has no deb-src entry; as root, add one for bookworm main (see docs/comparisons.md)"
      log "adding a deb-src entry for bookworm main (/etc/apt/sources.list.d/lookback-bench-src.sources)"
      cat >/etc/apt/sources.list.d/lookback-bench-src.sources <<'EOF'
# Added by lookback's bench/compare.sh: source packages for the real-program benchmarks.
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
      local attempt
      for attempt in 1 2 3 4 5; do
        apt-get -o DPkg::Lock::Timeout=120 update -qq >&2 && break
        log "apt-get update failed (attempt $attempt; another apt running?), retrying"; sleep 10
      done
    fi
    log "apt-get source $pkg"
    (cd "$work/src" && apt-get source -qq "$pkg" >&2 2>"$work/src/$pkg.apt.log") ||
      { cat "$work/src/$pkg.apt.log" >&2; die "apt-get source $pkg failed"; }
    dir=$(find "$work/src" -maxdepth 1 -type d -name "$pkg-[0-9]*" | sort | tail -n 1)
    [[ -n "$dir" ]] || die "apt-get source $pkg unpacked nothing"
  fi
  echo "$dir"
}

# ---- 4. builds -----------------------------------------------------------------------------
# configs: <compiler>-<plain|cyg|pg|xray>; objects in $work/obj/<program>/<config>/.
cc_of() { [[ $1 == gcc* ]] && echo gcc || echo clang; }
cflags_of() {  # config
  case "$1" in
    gcc-plain|clang-plain) echo "-O2" ;;
    gcc-cyg) echo "-O2 -finstrument-functions" ;;
    clang-cyg) echo "-O2 -finstrument-functions-after-inlining" ;;
    gcc-pg|clang-pg) echo "-O2 -pg" ;;
    clang-xray) echo "-O2 -fxray-instrument -fxray-instruction-threshold=1" ;;
    clang-pass) echo "-O2 -fpass-plugin=$pass_so" ;;
    clang-passfull) echo "-O2 -Xclang -load -Xclang $pass_so -fpass-plugin=$pass_so -mllvm -lookback-inline=full" ;;
  esac
}
configs=(gcc-plain gcc-cyg gcc-pg)
[[ $have_clang == 1 ]] && configs+=(clang-plain clang-cyg clang-pg)
[[ $have_xray == 1 ]] && configs+=(clang-xray)
[[ $have_pass == 1 ]] && configs+=(clang-pass clang-passfull)

stale() {  # out in... : true when out is missing or older than an input
  local out=$1; shift
  [[ $rebuild == 1 || ! -e "$out" ]] && return 0
  local f
  for f in "$@"; do [[ "$f" -nt "$out" ]] && return 0; done
  return 1
}

outs=()
job() {  # out cmd... : runs cmd in the background (at most $njobs at once), writing out atomically
  local out=$1; shift
  while (( $(jobs -rp | wc -l) >= njobs )); do wait -n || true; done
  (
    if N "$@" -o "$out.tmp" 2>"$out.log"; then mv "$out.tmp" "$out"; rm -f "$out.log"; else exit 1; fi
  ) &
  outs+=("$out")
}
wait_jobs() {  # waits for every job, then checks that each wrote its output
  wait || true
  local out failed=0
  for out in "${outs[@]}"; do
    if [[ ! -e "$out" ]]; then
      failed=1
      echo "== $out" >&2
      tail -n 20 "$out.log" >&2 2>/dev/null || true
    fi
  done
  outs=()
  [[ $failed == 0 ]] || die "build failed"
}

mkdir -p "$work/bin"
xray_main=""
if [[ $have_xray == 1 ]]; then
  xray_main="$work/obj/xray_fdr_main.o"
  mkdir -p "$work/obj"
  if stale "$xray_main" "$src/bench/xray_fdr_main.cc" "$src/bench/xray_fdr.h"; then
    job "$xray_main" clang++ -std=c++17 -O2 -Wall -Wextra -Werror -fno-exceptions -c "$src/bench/xray_fdr_main.cc"
  fi
fi

# build_program NAME MAIN_SOURCE "CPPFLAGS" "LIBS" SOURCES...
# Compiles every source per config (third-party code: -w), then links the
# variants: <name>_<cc>_{plain,glibc,lookback,floor,pg,xray}.
build_program() {
  local name=$1 main_src=$2 cppflags=$3 libs=$4; shift 4
  local sources=("$@") cfg s o objs
  for cfg in "${configs[@]}"; do
    mkdir -p "$work/obj/$name/$cfg"
    for s in "${sources[@]}"; do
      o="$work/obj/$name/$cfg/$(basename "${s%.c}").o"
      local extra=()
      [[ $cfg == clang-xray && $s == "$main_src" ]] && extra=(-Dmain=bench_program_main)
      # shellcheck disable=SC2086,SC2046
      local deps=("$s")
      [[ $cfg == clang-pass* ]] && deps+=("$pass_so")
      if stale "$o" "${deps[@]}"; then job "$o" "$(cc_of $cfg)" $(cflags_of $cfg) -w $cppflags "${extra[@]}" -c "$s"; fi
    done
  done
  wait_jobs
  local rpath
  rpath="-Wl,-rpath,$(dirname "$lb_so"):$(dirname "$floor_so")"
  for cfg in "${configs[@]}"; do
    local cc; cc=$(cc_of "$cfg")
    objs=()
    for s in "${sources[@]}"; do objs+=("$work/obj/$name/$cfg/$(basename "${s%.c}").o"); done
    local base="$work/bin/${name}_${cc}"
    # shellcheck disable=SC2086
    case "$cfg" in
      *-plain)
        if stale "${base}_plain" "${objs[@]}"; then job "${base}_plain" $cc "${objs[@]}" $libs; fi ;;
      *-cyg)
        if stale "${base}_glibc" "${objs[@]}"; then job "${base}_glibc" $cc "${objs[@]}" $libs; fi
        if stale "${base}_lookback" "${objs[@]}" "$lb_so"; then
          job "${base}_lookback" $cc "${objs[@]}" "$lb_so" $rpath $libs
        fi
        if stale "${base}_floor" "${objs[@]}" "$floor_so"; then
          job "${base}_floor" $cc "${objs[@]}" "$floor_so" $rpath $libs
        fi
        ;;
      *-pg)
        if stale "${base}_pg" "${objs[@]}"; then job "${base}_pg" $cc -pg "${objs[@]}" $libs; fi ;;
      clang-pass)
        if stale "${base}_pass" "${objs[@]}" "$lb_so"; then job "${base}_pass" $cc "${objs[@]}" "$lb_so" $rpath $libs; fi ;;
      clang-passfull)
        if stale "${base}_passfull" "${objs[@]}" "$lb_so"; then
          job "${base}_passfull" $cc "${objs[@]}" "$lb_so" $rpath $libs
        fi
        ;;
      clang-xray)
        if stale "${base}_xray" "${objs[@]}" "$xray_main"; then
          job "${base}_xray" clang++ -fxray-instrument "${objs[@]}" "$xray_main" $libs
        fi
        ;;
    esac
  done
  wait_jobs
}

manifest="$work/manifest.tsv"
: >"$manifest"
add_variants() {  # name check_prefix args...
  local name=$1 prefix=$2; shift 2
  printf 'check\t%s\t%s\n' "$name" "$prefix" >>"$manifest"
  local cc kind bin
  for cc in gcc clang; do
    [[ $cc == clang && $have_clang == 0 ]] && continue
    for kind in plain glibc lb-off lb-on lb-fast floor gprof uftrace xray-off xray-fdr pass-off pass-on pass-fast passfull-off passfull-on passfull-fast; do
      case $kind in
        plain) bin=plain ;; glibc) bin=glibc ;; lb-off|lb-on|lb-fast) bin=lookback ;; floor) bin=floor ;;
        gprof|uftrace) bin=pg ;; xray-off|xray-fdr) bin=xray ;; pass-off|pass-on|pass-fast) bin=pass ;;
        passfull-off|passfull-on|passfull-fast) bin=passfull ;;
      esac
      [[ $kind == xray-* && ( $cc != clang || $have_xray == 0 ) ]] && continue
      [[ $kind == pass* && ( $cc != clang || $have_pass == 0 ) ]] && continue
      { printf 'run\t%s\t%s\t%s\t%s' "$name" "$cc" "$kind" "$work/bin/${name}_${cc}_${bin}"
        printf '\t%s' "$@"; printf '\n'; } >>"$manifest"
    done
  done
}

t_build=$(date +%s)
declare -A srcdir
for p in "${progs[@]}"; do
  dir=$(fetch "${srcpkg[$p]}")
  srcdir[$p]=$dir
  case $p in
    sqlite)
      gen="$work/sqlite-amalgamation"
      if [[ ! -f "$gen/sqlite3.c" ]]; then
        have tclsh || die "generating sqlite3.c needs tclsh (apt-get install tcl)"
        log "generating the sqlite3.c amalgamation (configure; make sqlite3.c)"
        mkdir -p "$gen"
        (cd "$gen" && N "$dir/configure" --disable-tcl >configure.log 2>&1 && N make sqlite3.c >make.log 2>&1) ||
          die "could not generate sqlite3.c, see $gen/*.log"
      fi
      log "building sqlite speedtest1 variants (${configs[*]})"
      build_program sqlite "$dir/test/speedtest1.c" "-I$gen" "-lm -ldl -lpthread" "$gen/sqlite3.c" "$dir/test/speedtest1.c"
      add_variants sqlite "Verification Hash:" --memdb --size "$sqlite_size" --verify
      ;;
    lua)
      inc="$work/obj/lua-include"
      mkdir -p "$inc"
      # Debian's luaconf.h includes this generated header.
      echo '#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"' >"$inc/lua5.4-deb-multiarch.h.new"
      cmp -s "$inc/lua5.4-deb-multiarch.h.new" "$inc/lua5.4-deb-multiarch.h" 2>/dev/null ||
        mv "$inc/lua5.4-deb-multiarch.h.new" "$inc/lua5.4-deb-multiarch.h"
      rm -f "$inc/lua5.4-deb-multiarch.h.new"
      lua_sources=()
      for s in "$dir"/src/*.c; do [[ $(basename "$s") == luac.c ]] || lua_sources+=("$s"); done
      log "building lua variants (${configs[*]})"
      build_program lua "$dir/src/lua.c" "-I$inc -DLUA_COMPAT_5_3 -DLUA_USE_LINUX" "-lm -ldl" "${lua_sources[@]}"
      add_variants lua "checksum" "$src/bench/compare/bench.lua" "$lua_repeats"
      ;;
  esac
done
log "builds ready ($(($(date +%s) - t_build)) s)"
[[ $build_only == 1 ]] && exit 0

# ---- 5. run ------------------------------------------------------------------------------------
echo "## Real programs"
echo
for p in "${progs[@]}"; do
  case $p in
    sqlite) echo "- sqlite: \`speedtest1 --memdb --size $sqlite_size --verify\` ($(basename "${srcdir[$p]}"), Debian bookworm)" ;;
    lua) echo "- lua: \`lua bench/compare/bench.lua $lua_repeats\` ($(basename "${srcdir[$p]}"), Debian bookworm)" ;;
  esac
done
echo
drv_args=(--manifest "$manifest" --rounds "$rounds" "${uftrace_flag[@]}")
[[ -n "$raw" ]] && drv_args+=(--raw "$raw/programs.csv")
N "$build/bench/compare_driver" "${drv_args[@]}"

# ---- 6. code size ------------------------------------------------------------------------------
if [[ $have_pass == 1 ]] && have size; then
  echo
  echo "Code size (.text of the executable, \`size -A\`), clang: growth over the uninstrumented build"
  echo
  echo "| program | uninstrumented | hooks (-finstrument-functions-after-inlining) | pass (goal <= +25 %) | pass, full shape |"
  echo "|---|---:|---:|---:|---:|"
  text_of() { size -A "$1" | awk '$1 == ".text" { print $2 }'; }
  for p in "${progs[@]}"; do
    b="$work/bin/${p}_clang"
    plain=$(text_of "${b}_plain"); hooks=$(text_of "${b}_lookback"); pass=$(text_of "${b}_pass")
    full=$(text_of "${b}_passfull")
    awk -v p="$p" -v a="$plain" -v h="$hooks" -v s="$pass" -v f="$full" 'BEGIN {
      printf "| %s | %d | %d (%+.1f %%) | %d (%+.1f %%)%s | %d (%+.1f %%) |\n", p, a, h, 100 * (h - a) / a, s,
             100 * (s - a) / a, (s - a) / a <= 0.25 ? " (met)" : " (MISSED)", f, 100 * (f - a) / a }'
  done
fi
