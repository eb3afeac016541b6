#!/usr/bin/env bash
# The MPI matrix: tutti under each MPI that Kubeflow's MPIJob names, each under its own launcher:
# Debian's Open MPI 4 and MPICH 4 Hydra, and PyPI's Open MPI 5, MPICH 5 and Intel MPI, each from its
# venv (scripts/install-mpis.sh) with libtutti built against it (cmake/MpiMatrix.cmake):
#   mpis_cases.sh MPI CASE K prefix=DIR build=DIR plain=P kubexec=P hostfile=P
# MPI: openmpi4 (Debian's; prefix= and build= are then unused: the release build is the one) |
# mpich4 (Debian's Hydra 4.0 only, no MPI library to build against: the release build's
# collectives_check through tutti's PMI client; no transport case) | openmpi5 | mpich | impi. CASE:
#   boot       the MPI's launcher on this host: the ranks meet through it (Open MPI 5: PMIx, then
#              MPI; MPICH and Intel MPI: MPI over Hydra's PMI) over tutti's tcp and shm, with MPI
#              initialized by tutti and by the application; a program built without MPI (plain=)
#              meets through tutti's own PMI client (Hydra) or Open MPI 5's MPI.
#   transport  TUTTI_TRANSPORT=mpi at 1, 3 and 4 ranks: tutti's data over this MPI, whose name the
#              ranks print.
#   pods       the launcher on the host and one rank in each of 3 pods (network namespaces with
#              their own host names, pods.sh), kubexec as the launcher's remote shell (the option,
#              then the environment an MPIJob launcher sets), a hostfile from tutti-hostfile in
#              the MPI's format; tutti's tcp between pod addresses, then TUTTI_TRANSPORT=mpi.
# K: the pods case's subnet index (198.18.K.0/24). Exits 77 (skipped, with the reason) where the
# MPI was not installed or pods cannot be made here.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PODS_DIR=$HERE/../pods
MPI=$1 CASE_NAME=$2 K=$3
shift 3
PREFIX='' BUILD='' PLAIN='' KUBEXEC_BIN='' HOSTFILE=''
for arg in "$@"; do
  case $arg in
    prefix=*) PREFIX=${arg#*=} ;;
    build=*) BUILD=${arg#*=} ;;
    plain=*) PLAIN=${arg#*=} ;;
    kubexec=*) KUBEXEC_BIN=${arg#*=} ;;
    hostfile=*) HOSTFILE=${arg#*=} ;;
    *) echo "mpis_cases.sh: unknown argument '$arg'" >&2; exit 2 ;;
  esac
done
CASE=mpis_${MPI}_$CASE_NAME
CHECK=
case $MPI in
  openmpi4 | mpich4 | openmpi5 | mpich | impi) ;;
  *) echo "mpis_cases.sh: unknown MPI '$MPI' (openmpi4, mpich4, openmpi5, mpich or impi)" >&2; exit 2 ;;
esac
case $CASE_NAME in
  boot | transport | pods) ;;
  *) echo "mpis_cases.sh: unknown case '$CASE_NAME' (boot, transport or pods)" >&2; exit 2 ;;
esac
if [ "$MPI" = openmpi4 ]; then
  # Debian's, called by its own names (Debian's mpirun/mpicc alternatives may be MPICH's).
  command -v mpirun.openmpi >/dev/null 2>&1 || { echo "SKIP [$CASE]: no mpirun.openmpi (libopenmpi-dev)"; exit 77; }
elif [ "$MPI" = mpich4 ]; then
  command -v mpiexec.hydra >/dev/null 2>&1 || { echo "SKIP [$CASE]: no mpiexec.hydra (Debian's mpich)"; exit 77; }
  if [ "$CASE_NAME" = transport ]; then
    # Debian's mpich is installed for its Hydra launcher only (no libmpich-dev: the build stays on
    # Open MPI), so no program here is built against its MPI; PyPI's MPICH 5 row runs this case.
    echo "SKIP [$CASE]: nothing is built against Debian's MPICH (its Hydra only; see mpis_mpich_transport)"
    exit 77
  fi
  # The release build's collectives_check, which links only libtutti: tutti's own PMI client.
  CHECK=$PLAIN
elif [ ! -x "$PREFIX/bin/mpicc" ]; then
  echo "SKIP [$CASE]: no $MPI in $PREFIX (scripts/install-mpis.sh, which make deps runs)"
  exit 77
fi
[ "$MPI" = mpich4 ] || CHECK=$BUILD/bin/mpi_allreduce_check
[ -x "$CHECK" ] || { echo "FAIL [$CASE]: $CHECK was not built (cmake/MpiMatrix.cmake)" >&2; exit 1; }
# What each MPI's run prints as its library, and how its launcher is called.
case $MPI in
  openmpi4)
    LIBRARY='Open MPI v4\.'
    LAUNCH=(mpirun.openmpi --allow-run-as-root)
    [ "$CASE_NAME" = pods ] || LAUNCH+=(--oversubscribe)
    setenv() { echo "-x" "$1=$2"; }
    ;;
  openmpi5)
    LIBRARY='Open MPI v5\.'
    LAUNCH=("$PREFIX/bin/mpirun" --allow-run-as-root)
    # More ranks than this host's 2 CPUs; across pods the hostfile's slots place them.
    [ "$CASE_NAME" = pods ] || LAUNCH+=(--oversubscribe)
    # -x NAME=VALUE: one variable to every rank.
    setenv() { echo "-x" "$1=$2"; }
    ;;
  mpich4)
    LIBRARY=''
    LAUNCH=(mpiexec.hydra)
    setenv() { echo "-genv" "$1" "$2"; }
    ;;
  mpich)
    LIBRARY='MPICH Version: +5\.'
    LAUNCH=("$PREFIX/bin/mpiexec")
    setenv() { echo "-genv" "$1" "$2"; }
    ;;
  impi)
    LIBRARY='Intel\(R\) MPI Library 2021'
    # Intel's mpiexec finds its own folder through I_MPI_ROOT (its setvars.sh sets it).
    LAUNCH=(env I_MPI_ROOT="$PREFIX" "$PREFIX/bin/mpiexec")
    setenv() { echo "-genv" "$1" "$2"; }
    ;;
esac

# expect_ranks N [HOSTS]: N ranks said their allreduces agree with this MPI's, each once; with
# HOSTS, on as many different hosts.
expect_ranks() {
  local n=$1 hosts=${2:-} r
  if [ "$MPI" = mpich4 ]; then
    expect_out "collectives_check: $n ranks?, [0-9]+ checks per rank, 0 failed"
    if [ -n "$hosts" ]; then
      local seen
      seen=$(sed -nE 's/^rank on (.*)$/\1/p' "$WORK/out" | sort -u | wc -l)
      [ "$seen" -eq "$hosts" ] || fail "ranks ran on $seen hosts, expected $hosts"
    fi
    return 0
  fi
  for ((r = 0; r < n; r++)); do
    grep -qE "^rank $r: [0-9]+ allreduces agree with MPI_Allreduce \\($LIBRARY.*\\) on " "$WORK/out" ||
      fail "rank $r of $n did not report agreeing allreduces under $MPI"
  done
  [ "$(grep -c "allreduces agree" "$WORK/out")" -eq "$n" ] || fail "not exactly $n ranks reported"
  if [ -n "$hosts" ]; then
    local seen
    seen=$(sed -nE 's/.* on (.*)$/\1/p' "$WORK/out" | sort -u | wc -l)
    [ "$seen" -eq "$hosts" ] || fail "ranks ran on $seen hosts, expected $hosts"
  fi
}

if [ "$CASE_NAME" = pods ]; then
  # shellcheck source=../pods/pods.sh
  source "$PODS_DIR/pods.sh"
  pods_case_setup "mpis-$MPI" "$K" kubexec="$KUBEXEC_BIN" check="$CHECK"
  SUBNET="198.18.$K.0/24"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-$CASE.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  # shellcheck source=../pods/checks.sh
  source "$PODS_DIR/checks.sh"
fi
COUNTS=(--counts 0,1,7,1001,100003)

case $CASE_NAME in
  boot)
    for t in tcp:3 shm:4 auto:2; do
      # shellcheck disable=SC2046  # setenv's words
      run 120 "${LAUNCH[@]}" -n "${t#*:}" $(setenv TUTTI_TRANSPORT "${t%:*}") "$CHECK" "${COUNTS[@]}"
      expect_rc 0
      expect_ranks "${t#*:}"
      note "${t#*:} ranks over tutti's ${t%:*}: correct"
    done
    # Debian's MPICH row runs the release build's collectives_check already (no MPI of its own).
    [ "$MPI" = mpich4 ] && { echo "[$CASE] ok"; exit 0; }
    # The application initializes MPI first: tutti must then meet the others through MPI, never
    # through a PMI client of its own on the connection MPI took.
    # shellcheck disable=SC2046
    run 120 "${LAUNCH[@]}" -n 3 $(setenv TUTTI_TRANSPORT shm) "$CHECK" "${COUNTS[@]}" --app-init
    expect_rc 0
    expect_ranks 3
    note "3 ranks, MPI initialized by the application: correct"
    # A program that links only libtutti (built with Debian's Open MPI): Hydra's PMI through tutti's
    # own client, Open MPI 5's through its MPI.
    run 120 "${LAUNCH[@]}" -n 3 "$PLAIN" --counts 0,1,1001 --collectives allreduce,broadcast
    expect_rc 0
    expect_out "collectives_check: 3 ranks, [0-9]+ checks per rank, 0 failed"
    note "the release build's collectives_check: 3 ranks, 0 failed"
    ;;
  transport)
    for n in 1 3 4; do
      # shellcheck disable=SC2046
      run 120 "${LAUNCH[@]}" -n $n $(setenv TUTTI_TRANSPORT mpi) $(setenv TUTTI_SEGMENT_BYTES 64K) \
        "$CHECK" "${COUNTS[@]}"
      expect_rc 0
      expect_ranks $n
      note "$n ranks over TUTTI_TRANSPORT=mpi: correct ($(sed -nE 's/.*agree with MPI_Allreduce \((.*)\) on .*/\1/p' "$WORK/out" | head -1))"
    done
    ;;
  pods)
    [ -x "$HOSTFILE" ] || fail "no tutti-hostfile given"
    [ -x "$KUBEXEC" ] || fail "no kubexec given"
    prefix=mp$MPI
    pods_up "$prefix" 3 "$K"
    bridge=tpb$K
    case $MPI in
      openmpi4 | openmpi5) format=openmpi ;;
      mpich | mpich4) format=mpich ;;
      impi) format=intel ;;
    esac
    "$HOSTFILE" --pods "$(pod_names "$prefix" 3)" --slots 1 --format $format -o "$WORK/hostfile" ||
      fail "tutti-hostfile --format $format failed"
    note "hostfile ($format): $(tr '\n' ' ' <"$WORK/hostfile")"
    # Each MPI's remote shell and network, as options and as an MPIJob launcher's environment.
    case $MPI in
      openmpi4)
        by_option=(--hostfile "$WORK/hostfile" --mca plm_rsh_agent "$KUBEXEC"
          --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include "$SUBNET"
          --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET")
        by_env=(OMPI_MCA_plm_rsh_agent="$KUBEXEC" OMPI_MCA_plm_rsh_no_tree_spawn=1
          OMPI_MCA_oob_tcp_if_include="$SUBNET" OMPI_MCA_btl=tcp,self
          OMPI_MCA_btl_tcp_if_include="$SUBNET" OMPI_MCA_orte_default_hostfile="$WORK/hostfile")
        ;;
      openmpi5)
        # PRRTE's launcher reads PRTE_MCA_* (the OMPI_MCA_plm_*/orte_* names of Open MPI 4 are
        # ignored); MPI's own transports still read OMPI_MCA_*.
        by_option=(--hostfile "$WORK/hostfile" --prtemca plm_ssh_agent "$KUBEXEC"
          --prtemca plm_ssh_no_tree_spawn 1 --prtemca oob_tcp_if_include "$SUBNET"
          --mca btl tcp,self --mca btl_tcp_if_include "$SUBNET")
        by_env=(PRTE_MCA_plm_ssh_agent="$KUBEXEC" PRTE_MCA_plm_ssh_no_tree_spawn=1
          PRTE_MCA_oob_tcp_if_include="$SUBNET" OMPI_MCA_btl=tcp,self
          OMPI_MCA_btl_tcp_if_include="$SUBNET" PRTE_MCA_prte_default_hostfile="$WORK/hostfile")
        ;;
      mpich | mpich4)
        by_option=(-f "$WORK/hostfile" -launcher ssh -launcher-exec "$KUBEXEC" -iface "$bridge")
        by_env=(HYDRA_HOST_FILE="$WORK/hostfile" HYDRA_LAUNCHER=ssh HYDRA_LAUNCHER_EXEC="$KUBEXEC"
          HYDRA_IFACE="$bridge")
        ;;
      impi)
        # Intel's Hydra fills each host's cores first whatever the hostfile's counts say: -ppn
        # (I_MPI_PERHOST) gives the slots per pod, as an MPIJob's slotsPerWorker.
        by_option=(-f "$WORK/hostfile" -ppn 1 -bootstrap ssh -bootstrap-exec "$KUBEXEC"
          -iface "$bridge")
        by_env=(I_MPI_HYDRA_HOST_FILE="$WORK/hostfile" I_MPI_PERHOST=1 I_MPI_HYDRA_BOOTSTRAP=ssh
          I_MPI_HYDRA_BOOTSTRAP_EXEC="$KUBEXEC" I_MPI_HYDRA_IFACE="$bridge")
        ;;
    esac
    # shellcheck disable=SC2046
    # Debian's MPICH row: collectives_check prints no host, so each rank says where it runs first;
    # and with no MPI built against that MPICH, the second run is over tutti's tcp too.
    program=("$CHECK")
    second=mpi
    if [ "$MPI" = mpich4 ]; then
      program=(/bin/sh -c 'echo "rank on $(hostname)"; exec "$0" "$@"' "$CHECK")
      second=tcp
    fi
    run 180 "${LAUNCH[@]}" "${by_option[@]}" -n 3 $(setenv TUTTI_TRANSPORT tcp) "${program[@]}" "${COUNTS[@]}"
    cat "$WORK/out" "$WORK/err"
    expect_rc 0
    expect_ranks 3 3
    note "3 ranks in 3 pods (remote shell by option), tutti's tcp: correct"
    # shellcheck disable=SC2046
    run 180 env "${by_env[@]}" "${LAUNCH[@]}" -n 3 $(setenv TUTTI_TRANSPORT $second) "${program[@]}" "${COUNTS[@]}"
    expect_rc 0
    expect_ranks 3 3
    note "3 ranks in 3 pods (remote shell from the environment), TUTTI_TRANSPORT=$second: correct"
    pods_expect_no_leftovers pods_pids
    ;;
  *) echo "mpis_cases.sh: unknown case '$CASE_NAME'" >&2; exit 2 ;;
esac
echo "[$CASE] ok"
