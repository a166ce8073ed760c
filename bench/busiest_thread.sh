# Sourced by the benchmarks: what a dump says of its busiest thread (the one
# that wrote the most records), from `lookback info`.
#   bench_busiest_thread LOOKBACK DUMP  ->  "ESTIMATE SPAN"
# ESTIMATE is the overhead budget's latest estimate for that thread ("2.1%",
# "-" when the budget was off or never judged it); SPAN the seconds its ring
# holds (first to last event in the dump).
bench_busiest_thread() {
  "$1" info "$2" | tr -d , | awk '
    / thread [0-9]+: estimate / { t = $2; sub(":", "", t); e = $4; est[t] = e }
    $1 ~ /^[0-9]+$/ && NF >= 8 {
      k = 0
      for (i = 2; i <= NF && k < 3; i++) if ($i ~ /^[0-9]+$/) v[++k] = $i; else if (k > 0) k = 0
      if (k < 3) next
      n = v[2] + v[3]
      span = $(i); unit = $(i + 1)
      s = span + 0
      if (unit == "ms") s /= 1e3; else if (unit == "us" || unit == "µs") s /= 1e6; else if (unit == "ns") s /= 1e9
      if (n > best) { best = n; tid = $1; secs = s }
    }
    END {
      printf "%s %s\n", ((tid in est) ? est[tid] : "-"), ((best > 0) ? sprintf("%.3f", secs) : "-")
    }'
}
