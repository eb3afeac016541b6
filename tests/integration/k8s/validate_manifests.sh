#!/usr/bin/env bash
# validate_manifests.sh SOURCE_DIR CRD_DIR PREFIX
# 1. Every manifest under examples/k8s passes scripts/k8s_validate.py against the CRDs in CRD_DIR,
#    the Dockerfiles' promises and the `cmake --install` tree PREFIX.
# 2. Each broken/*.yaml (an MPIJob with RBAC, a PyTorchJob) fails, with every message its
#    `# expect:` lines name.
# 3. Each mutation in broken_cases.txt (one real manifest or Dockerfile, one mistake) fails with its
#    expected message: a typo in a manifest's field, command, env, path, image or RBAC verb fails
#    here, not on a cluster.
set -euo pipefail
SRC=$1 CRDS=$2 PREFIX=$3
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=/usr/bin/python3
fail() { echo "FAIL: $*" >&2; exit 1; }
# The CRDs are Kubeflow's (Apache-2.0, The Kubeflow Authors: kubeflow/mpi-operator's MPIJob v2beta1,
# training-operator's PyTorchJob v1, trainer's TrainJob and ClusterTrainingRuntime v1alpha1), kept
# unchanged in crds/ beside this script, xz-compressed (crds/README.md names each file's source and
# commit); k8s_validate.py reads them compressed. TUTTI_K8S_CRDS=DIR checks against other ones.
CRDS=${TUTTI_K8S_CRDS:-$CRDS}
shopt -s nullglob
crd_files=("$CRDS"/*.yaml "$CRDS"/*.yaml.xz)
shopt -u nullglob
[ ${#crd_files[@]} -ge 4 ] ||
  fail "expected Kubeflow's 4 CRDs (MPIJob, PyTorchJob, TrainJob, ClusterTrainingRuntime) in $CRDS, found ${#crd_files[@]}"
"$PY" -c 'import jsonschema, yaml' 2>/dev/null ||
  fail "Debian's python3 lacks jsonschema or yaml: apt-get install python3-jsonschema python3-yaml (make deps)"
[ -x "$PREFIX/bin/tuttirun" ] || fail "no installed tree at $PREFIX (the install_test_prefix fixture)"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/tutti-k8s-validate.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
validate() { "$PY" "$SRC/scripts/k8s_validate.py" --crds "$CRDS" --installed "$PREFIX" --source "$SRC" "$@"; }

shopt -s nullglob
manifests=("$SRC"/examples/k8s/*.yaml)
[ ${#manifests[@]} -ge 6 ] || fail "expected the example manifests under examples/k8s, found ${#manifests[@]}"
validate "${manifests[@]}" || fail "the example manifests do not validate"

# expect_failure LABEL OUTPUT_FILE REGEX...: the validator failed, printing a line for each REGEX.
expect_failure() {
  local label=$1 out=$2 rc=$3 regex
  shift 3
  [ "$rc" -ne 0 ] || { cat "$out"; fail "$label: the validator accepted it"; }
  for regex in "$@"; do
    grep -qE -- "$regex" "$out" || { cat "$out"; fail "$label: no message matching: $regex"; }
  done
}

broken_files=("$HERE"/broken/*.yaml)
[ ${#broken_files[@]} -ge 2 ] || fail "expected the broken manifests under $HERE/broken, found ${#broken_files[@]}"
for broken in "${broken_files[@]}"; do
  mapfile -t expected < <(sed -n 's/^# expect: //p' "$broken")
  [ ${#expected[@]} -ge 5 ] || fail "$broken lists only ${#expected[@]} expected messages"
  rc=0
  validate "$broken" >"$WORK/out" 2>&1 || rc=$?
  expect_failure "$(basename "$broken")" "$WORK/out" "$rc" "${expected[@]}"
  echo "$(basename "$broken"): rejected with all ${#expected[@]} expected messages"
done

cases=0
while IFS=$'\t' read -r file expression message; do
  case $file in '#'* | '') continue ;; esac
  rm -rf "$WORK/tree"
  mkdir -p "$WORK/tree/examples" "$WORK/tree/docker"
  cp -r "$SRC/examples/k8s" "$WORK/tree/examples/"
  cp "$SRC"/docker/Dockerfile "$WORK/tree/docker/"
  sed -i -e "$expression" "$WORK/tree/$file"
  cmp -s "$SRC/$file" "$WORK/tree/$file" && fail "broken_cases.txt: '$expression' changes nothing in $file"
  rc=0
  "$PY" "$SRC/scripts/k8s_validate.py" --crds "$CRDS" --installed "$PREFIX" --docker "$WORK/tree/docker" \
    --cmake "$SRC/CMakeLists.txt" --source "$SRC" "$WORK/tree/examples/k8s"/*.yaml >"$WORK/out" 2>&1 || rc=$?
  expect_failure "$file with '$expression'" "$WORK/out" "$rc" "$message"
  cases=$((cases + 1))
done <"$HERE/broken_cases.txt"
[ $cases -ge 5 ] || fail "only $cases mutation cases ran"
echo "$cases mutations of the real manifests and Dockerfiles rejected with the expected messages"
echo PASS
