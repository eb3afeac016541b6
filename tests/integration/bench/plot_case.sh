#!/usr/bin/env bash
# bench/plot.sh draws tutti-bench --csv files (with and without a baseline) to SVG and PNG, labels
# each curve by its file name, and refuses what is not a tutti-bench CSV or an unknown image type.
set -u
PLOT=$1
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-plot-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

header="size,count,type,redop,root,nranks,time_us,algbw_gbps,busbw_gbps,wrong,inplace_time_us,"
header+="inplace_algbw_gbps,inplace_busbw_gbps,inplace_wrong,baseline,baseline_time_us,"
header+="baseline_algbw_gbps,baseline_busbw_gbps,baseline_wrong,ratio"
{
  echo "$header"
  echo "8,2,float,sum,-1,2,5.0,0.0016,0.0016,0,4.0,0.002,0.002,0,mpi,1.0,0.008,0.008,0,0.25"
  echo "4096,1024,float,sum,-1,2,10.0,0.41,0.41,0,9.0,0.45,0.45,0,mpi,3.0,1.36,1.36,0,0.33"
  echo "4096,1024,int32,sum,-1,2,10.0,0.41,0.41,0,9.0,0.45,0.45,0,mpi,3.0,1.36,1.36,0,7.5"
  echo "1048576,262144,float,sum,-1,2,100.0,10.5,10.5,0,90.0,11.6,11.6,0,mpi,100,10.5,10.5,0,1.1"
} >"$WORK/mpi-shm-np2.csv"
{
  echo "$header"
  echo "8,2,float,sum,-1,2,5.0,0.0016,0.0016,0,4.0,0.002,0.002,0,none,,,,,"
  echo "1048576,262144,float,sum,-1,2,100.0,10.5,10.5,0,90.0,11.6,11.6,0,none,,,,,"
} >"$WORK/tutti-np2.csv"

bash "$PLOT" "$WORK/out.svg" "$WORK/mpi-shm-np2.csv" "$WORK/tutti-np2.csv" >/dev/null ||
  fail "svg: exit $?"
grep -q '<svg' "$WORK/out.svg" || fail "out.svg is not an SVG"
grep -q 'mpi-shm-np2: tutti' "$WORK/out.svg" || fail "no curve labelled by the file name"
grep -q 'mpi-shm-np2: mpi' "$WORK/out.svg" || fail "no baseline curve"
grep -q 'ratio' "$WORK/out.svg" || fail "no ratio panel"
bash "$PLOT" -t int32 "$WORK/out.png" "$WORK/mpi-shm-np2.csv" >/dev/null || fail "png: exit $?"
[ "$(head -c 4 "$WORK/out.png" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "out.png is not a PNG"

# The current format: out-of-place columns too; both ratios in the one ratio panel.
{
  echo "$header,oop_baseline_time_us,oop_baseline_algbw_gbps,oop_baseline_busbw_gbps,oop_baseline_wrong,oop_ratio"
  echo "8,2,float,sum,-1,2,5.0,0.0016,0.0016,0,4.0,0.002,0.002,0,mpi,1.0,0.008,0.008,0,0.25,2.0,0.004,0.004,0,0.4"
  echo "1048576,262144,float,sum,-1,2,100.0,10.5,10.5,0,90.0,11.6,11.6,0,mpi,100,10.5,10.5,0,1.1,110,9.5,9.5,0,0.9"
} >"$WORK/mpi-oop.csv"
bash "$PLOT" "$WORK/oop.svg" "$WORK/mpi-oop.csv" >/dev/null || fail "out-of-place svg: exit $?"
grep -q 'mpi-oop: in place' "$WORK/oop.svg" || fail "no in-place ratio curve"
grep -q 'mpi-oop: out of place' "$WORK/oop.svg" || fail "no out-of-place ratio curve"
! grep -q 'mpi-shm-np2: out of place' "$WORK/out.svg" || fail "an out-of-place curve from a file without one"

# Only tutti's own rows: one panel, no ratio.
bash "$PLOT" "$WORK/own.svg" "$WORK/tutti-np2.csv" >/dev/null || fail "no-baseline svg: exit $?"
! grep -q 'ratio' "$WORK/own.svg" || fail "a ratio panel without a baseline"

echo "a,b" >"$WORK/bad.csv"
bash "$PLOT" "$WORK/bad.svg" "$WORK/bad.csv" 2>"$WORK/err" && fail "accepted a foreign CSV"
grep -q 'not a tutti-bench --csv file' "$WORK/err" || fail "no reason for the foreign CSV"
bash "$PLOT" "$WORK/out.gif" "$WORK/tutti-np2.csv" 2>"$WORK/err"
[ $? -eq 2 ] || fail ".gif output did not exit 2"
echo PASS
