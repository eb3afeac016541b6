#!/usr/bin/env bash
# Draws tutti-bench --csv results: bus bandwidth (tutti in place, and the baseline) and the ratio
# tutti/baseline against message size, one line per CSV file, to an SVG or PNG chosen by the
# output's extension. Rows of one dtype and op are drawn (default float, sum).
#
#   bench/plot.sh [-t TYPE] [-o OP] [--title TEXT] OUT.svg|OUT.png RESULT.csv [RESULT.csv...]
#
# Each CSV is labelled by its file name without .csv (e.g. mpi-shm-np2.csv -> "mpi-shm-np2"), so
# name the files after the run. A CSV without baseline columns draws only tutti's bandwidth.
set -euo pipefail

usage() {
  sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

type=float
op=sum
title="tutti-bench allreduce"
while [ $# -gt 0 ]; do
  case "$1" in
    -t) type=${2:?-t needs a dtype}; shift 2 ;;
    -o) op=${2:?-o needs an op}; shift 2 ;;
    --title) title=${2:?--title needs text}; shift 2 ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "plot.sh: unknown flag $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || usage
out=$1
shift

if ! command -v gnuplot >/dev/null 2>&1; then
  echo "plot.sh: gnuplot not found; install gnuplot-nox (scripts/install-deps.sh)" >&2
  exit 1
fi
for csv in "$@"; do
  [ -r "$csv" ] || { echo "plot.sh: cannot read $csv" >&2; exit 1; }
  head -n1 "$csv" | grep -q '^size,.*inplace_busbw_gbps' ||
    { echo "plot.sh: $csv is not a tutti-bench --csv file (no size,...,inplace_busbw_gbps header)" >&2; exit 1; }
done

case "$out" in
  *.svg) terminal="svg size 900,800 dynamic enhanced font 'sans,12' background rgb 'white'" ;;
  *.png) terminal="pngcairo size 1200,1000 enhanced font 'sans,11'" ;;
  *) echo "plot.sh: $out: the output must end in .svg or .png" >&2; exit 2 ;;
esac

# One gnuplot plot clause per file and series; rows of other dtypes/ops become NaN (not drawn).
keep="(strcol(\"type\") eq \"$type\" && strcol(\"redop\") eq \"$op\")"
bw_plots=()
ratio_plots=()
i=0
for csv in "$@"; do
  i=$((i + 1))
  label=$(basename "$csv" .csv)
  bw_plots+=("'$csv' using (column(\"size\")):($keep ? column(\"inplace_busbw_gbps\") : NaN) with linespoints lc $i pt 7 dt 1 title '$label: tutti'")
  # The in-place ratio (tutti in place / the peer in place), and where the file has it the
  # out-of-place one (tutti out of place / the peer out of place), dashed, in the same plot.
  if awk -F, 'NR == 1 { for (c = 1; c <= NF; c++) if ($c == "ratio") col = c }
              NR > 1 && col && $col != "" { found = 1 } END { exit !found }' "$csv"; then
    base=$(awk -F, 'NR == 2 { print $15 }' "$csv")
    bw_plots+=("'$csv' using (column(\"size\")):($keep ? column(\"baseline_busbw_gbps\") : NaN) with linespoints lc $i pt 6 dt 2 title '$label: $base'")
    ratio_plots+=("'$csv' using (column(\"size\")):($keep ? column(\"ratio\") : NaN) with linespoints lc $i pt 7 dt 1 title '$label: in place'")
    if head -n1 "$csv" | grep -q ',oop_ratio' &&
       awk -F, 'NR > 1 && $NF != "" { found = 1 } END { exit !found }' "$csv"; then
      ratio_plots+=("'$csv' using (column(\"size\")):($keep ? column(\"oop_ratio\") : NaN) with linespoints lc $i pt 6 dt 2 title '$label: out of place'")
    fi
  fi
done
join() {
  local IFS=$'\x1f'
  local s="$*"
  echo "${s//$'\x1f'/, }"
}

script=$(mktemp "${TMPDIR:-/tmp}/tutti-plot.XXXXXX")
trap 'rm -f "$script"' EXIT
{
  echo "set terminal $terminal"
  echo "set output '$out'"
  echo "set datafile separator ','"
  echo "set datafile columnheaders"
  echo "set logscale x 2"
  echo "set format x '%.0b%B'"
  echo "set grid"
  echo "set lmargin 12"
  echo "set rmargin 30"
  echo "set logscale y 10"
  echo "set key outside right top"
  if [ ${#ratio_plots[@]} -gt 0 ]; then
    echo "set multiplot layout 2,1 title '$title ($type $op)'"
  else
    echo "set title '$title ($type $op)'"
  fi
  echo "set ylabel 'busbw (GB/s)'"
  echo "set xlabel 'message size (bytes)'"
  echo "plot $(join "${bw_plots[@]}")"
  if [ ${#ratio_plots[@]} -gt 0 ]; then
    echo "set ylabel 'ratio: tutti busbw / baseline busbw'"
    echo "set logscale y 2"
    echo "set format y '%g'"
    echo "set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'gray'"
    echo "plot $(join "${ratio_plots[@]}")"
    echo "unset multiplot"
  fi
} >"$script"
gnuplot "$script"
echo "plot.sh: wrote $out"
