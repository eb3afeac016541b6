#!/usr/bin/env bash
# Runs the README's quick start on a fresh Debian 12: a debootstrap root (bookworm, minbase, plus
# make, git and sudo, nothing else), with the host's CUDA toolkit bind-mounted read-only at the same
# place (/usr/local/cuda by default), a clone of this repository in it, and then, inside the root:
#   full mode (default):  make demo && make test       (the README's two commands, as typed)
#   --configure-only:     make configure               (scripts/install-deps.sh + cmake --preset
#                                                       release: what both commands start with)
# The root's Debian packages are Debian's own, so CMake's modules are pristine (the check says so
# with `dpkg -V cmake-data`), unlike a development machine where one may have been patched.
#
#   scripts/fresh-debian-check.sh [--configure-only] [--worktree] [--user NAME]
#                                 [--deps-first] [--cuda DIR | --no-cuda] [--cache DIR] [--root DIR] [--keep]
#                                 [--mirror URL]
#
#   --deps-first   install the project's Debian packages in the root first, as part of the set-up
#                  (three tries; a failure there exits 2, the machine's, not the project's): what
#                  CI uses, so that a flaky mirror does not fail a change.
#   --worktree     the working tree as it is (tracked files with their uncommitted changes, and
#                  untracked files git does not ignore), not just the last commit: the clone gets
#                  those files copied over it.
#   --user NAME    run the commands as NAME, a user with password-less sudo (install-deps.sh then
#                  installs through sudo), instead of as root.
#   --cuda DIR     the CUDA toolkit to mount (default /usr/local/cuda when it exists);
#                  --no-cuda mounts none.
#   --cache DIR    keep the downloaded .deb files in DIR (DIR/debootstrap, DIR/apt) for the next
#                  run; the root is still installed from scratch each time.
#   --root DIR     where to build the root (must not exist, or be empty); default a new folder in
#                  /var/tmp. --keep leaves it there afterwards (unmounted); otherwise it is deleted.
#   --mirror URL   Debian mirror (default http://deb.debian.org/debian; security updates from
#                  URL-security).
# Needs root (debootstrap, chroot, mount) and installs debootstrap with apt when it is missing. Exit
# status: 0 when the commands passed, 1 when one of them failed, 2 when the root could not be set up
# (usage, debootstrap, mounts). The mounts are undone on every exit, also on Ctrl-C; a process the
# commands left running inside the root is stopped first.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mode=full
deps_first=0
source_kind=clone
run_user=""
cuda=/usr/local/cuda
cuda_given=0
cache=""
root=""
keep=0
mirror=http://deb.debian.org/debian
suite=bookworm

say() { echo "fresh-debian-check: $*"; }
die() { echo "fresh-debian-check: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; }

while [ $# -gt 0 ]; do
  case "$1" in
    --configure-only) mode=configure ;;
    --full) mode=full ;;
    --worktree) source_kind=worktree ;;
    --deps-first) deps_first=1 ;;
    --clone) source_kind=clone ;;
    --user) run_user=${2:?--user needs a name}; shift ;;
    --cuda) cuda=${2:?--cuda needs a folder}; cuda_given=1; shift ;;
    --no-cuda) cuda="" ;;
    --cache) cache=${2:?--cache needs a folder}; shift ;;
    --root) root=${2:?--root needs a folder}; shift ;;
    --keep) keep=1 ;;
    --mirror) mirror=${2:?--mirror needs a URL}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
  shift
done

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap, chroot and mount); run it with sudo"
case "$run_user" in
  "" | [a-z_][a-z0-9_-]*) ;;
  *) die "--user: '$run_user' is not a plain user name" ;;
esac
if [ -n "$cuda" ] && [ ! -d "$cuda" ]; then
  [ "$cuda_given" -eq 0 ] || die "--cuda $cuda: no such folder"
  say "no $cuda here: the root gets no CUDA toolkit"
  cuda=""
fi
git -C "$repo" rev-parse --git-dir >/dev/null 2>&1 || die "$repo is not a git checkout"

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null || die "apt-get update failed"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap \
    >/dev/null || die "apt-get install debootstrap failed"
fi

if [ -z "$root" ]; then
  root=$(mktemp -d /var/tmp/tutti-fresh-debian.XXXXXX)
else
  mkdir -p "$root"
  [ -z "$(ls -A "$root")" ] || die "--root $root is not empty"
fi
root=$(cd "$root" && pwd -P)
[ "$root" != / ] || die "--root must not be /"
chmod 0755 "$root"  # it becomes /: mktemp's 0700 would shut out _apt and --user
logs=$(mktemp -d /var/tmp/tutti-fresh-debian-logs.XXXXXX)
phase=setup

# --- Mounts, undone in reverse order on every exit ----------------------------------------------
mounts=()
mount_at() {  # mount_at TARGET MOUNT-ARGS...: mount and remember it
  local target=$1; shift
  mkdir -p "$target" || return 1
  mount "$@" "$target" || return 1
  mounts+=("$target")
}

under_root() {  # the mount points under $root still present, deepest first
  findmnt -rn -o TARGET | awk -v r="$root" 'index($0, r "/") == 1' | sort -r
}

stop_root_processes() {  # processes whose root directory is $root (left by the commands)
  local signal pid pids
  for signal in TERM KILL; do
    pids=()
    for pid in /proc/[0-9]*; do
      [ "$(readlink "$pid/root" 2>/dev/null)" = "$root" ] && pids+=("${pid#/proc/}")
    done
    [ ${#pids[@]} -gt 0 ] || return 0
    say "stopping (SIG$signal) processes left in the root: ${pids[*]}"
    kill -s "$signal" "${pids[@]}" 2>/dev/null || true
    sleep 2
  done
}

cleanup() {
  local status=$? i left
  trap - EXIT INT TERM
  set +e
  # A failure before the commands ran is the set-up's (exit 2), not the project's.
  if [ "$phase" = setup ] && [ "$status" -ne 0 ] && [ "$status" -lt 128 ]; then status=2; fi
  stop_root_processes
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[i]}" 2>/dev/null || umount -R -l "${mounts[i]}"
  done
  left=$(under_root)
  if [ -n "$left" ]; then
    echo "fresh-debian-check: still mounted, so $root is left in place: ${left//$'\n'/ }" >&2
    [ "$status" -ne 0 ] || status=2
  elif [ "$keep" -eq 1 ]; then
    say "root kept (nothing mounted): $root"
  else
    rm -rf --one-file-system "$root"
  fi
  say "logs: $logs"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

# --- debootstrap ------------------------------------------------------------------------------
# shellcheck disable=SC2054  # one option whose value is a comma-separated list
debootstrap_args=(--variant=minbase --include=make,git,sudo)
if [ -n "$cache" ]; then
  mkdir -p "$cache/debootstrap" "$cache/apt/partial"
  cache=$(cd "$cache" && pwd -P)
  debootstrap_args+=("--cache-dir=$cache/debootstrap")
fi
say "debootstrap ${debootstrap_args[*]} $suite $root $mirror (log: $logs/debootstrap.log)"
t0=$(date +%s)
if ! debootstrap "${debootstrap_args[@]}" "$suite" "$root" "$mirror" \
     >"$logs/debootstrap.log" 2>&1; then
  tail -n 25 "$logs/debootstrap.log" >&2
  die "debootstrap failed (command: debootstrap ${debootstrap_args[*]} $suite $root $mirror)"
fi
say "debootstrap done in $(elapsed "$t0")"

# What a Debian 12 installation has besides the packages: its apt sources (with the updates and
# security suites), name resolution and a host name.
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $mirror-security $suite-security main
EOF
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
cp -L /etc/hosts "$root/etc/hosts"
hostname >"$root/etc/hostname"
# This machine's trust for its way out (an egress proxy's own CA, here in the host's bundle): the
# full mode's PyPI download (torch 2.x) verifies through it. A user's fresh Debian that reaches
# PyPI directly needs none of it; the host's local CAs go where Debian's ca-certificates would take
# them up, its bundle where pip and Python look, and its pip.conf (which may name that bundle).
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -rL /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs"
  cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
fi
[ ! -f /etc/pip.conf ] || cp -L /etc/pip.conf "$root/etc/pip.conf"

# --- Mounts -----------------------------------------------------------------------------------
# The root is a mount point of its own, as / is on a real machine: `ip netns exec` (the pods tests)
# and `unshare --propagation` change the propagation of /, which fails (EINVAL) on a plain
# directory. Mounted first, so everything below is mounted on top of it (and unmounted before it).
mount_at "$root" --bind "$root"
# /dev is bound without its submounts and made private, so that the devpts and tmpfs mounted on the
# root's /dev/pts and /dev/shm can never propagate back to the host's /dev.
mount_at "$root/proc" -t proc proc
mount_at "$root/sys" -t sysfs sysfs 2>/dev/null || mount_at "$root/sys" --rbind /sys
mount --make-rslave "$root/sys"
mount_at "$root/dev" --bind /dev
mount --make-private "$root/dev"
mount_at "$root/dev/pts" -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts
mount_at "$root/dev/shm" -t tmpfs -o mode=1777 tmpfs
if [ -n "$cache" ]; then
  mount_at "$root/var/cache/apt/archives" --bind "$cache/apt"
fi
if [ -n "$cuda" ]; then
  # The same path as here; a symlink (/usr/local/cuda -> /usr/local/cuda-13.0) stays a symlink.
  cuda_real=$(readlink -f "$cuda")
  mount_at "$root$cuda_real" --bind "$cuda_real"
  mount -o remount,bind,ro "$root$cuda_real"
  if [ "$cuda_real" != "$cuda" ]; then
    mkdir -p "$(dirname "$root$cuda")"
    ln -sfn "$cuda_real" "$root$cuda"
  fi
  say "CUDA: $cuda ($cuda_real) mounted read-only"
fi

# --- The project ------------------------------------------------------------------------------
if [ -n "$run_user" ]; then
  chroot "$root" useradd --create-home --shell /bin/bash "$run_user"
  echo "$run_user ALL=(ALL) NOPASSWD:ALL" >"$root/etc/sudoers.d/$run_user"
  chmod 0440 "$root/etc/sudoers.d/$run_user"
  home=/home/$run_user
else
  home=/root
fi
work=$home/tutti
git clone -q --no-hardlinks "$repo" "$root$work"
say "clone of $(git -C "$repo" rev-parse --short HEAD) in $work"
if [ "$source_kind" = worktree ]; then
  # Tracked files as they are now, and untracked ones that git does not ignore; deletions too.
  (cd "$repo" && git ls-files -z --cached --others --exclude-standard \
     | while IFS= read -r -d '' f; do
         if [ -e "$f" ] || [ -L "$f" ]; then printf '%s\0' "$f"; fi
       done \
     | tar --null -T - -cf -) | tar -C "$root$work" -xf -
  (cd "$repo" && git ls-files -z --deleted) | (cd "$root$work" && xargs -0 -r rm -f --)
  changed=$(git -C "$root$work" status --short | wc -l)
  say "working tree copied over it: $changed path(s) differ from the commit"
fi
if [ -n "$run_user" ]; then
  chroot "$root" chown -R "$run_user:$run_user" "$work"
fi

in_root() {  # in_root COMMAND: run a shell command in the project folder, as a fresh login would
  local env=(/usr/bin/env -i "HOME=$home" "USER=${run_user:-root}" "LOGNAME=${run_user:-root}"
             PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
             "TERM=${TERM:-dumb}" LANG=C.UTF-8)
  if [ -n "$run_user" ]; then
    chroot "$root" /usr/bin/sudo -u "$run_user" -H "${env[@]}" /bin/bash -c "cd $work && $1"
  else
    chroot "$root" "${env[@]}" /bin/bash -c "cd $work && $1"
  fi
}

# Whether the root's CMake modules are Debian's as shipped (a modified FindCUDAToolkit.cmake is what
# made the configure pass on a development machine and fail on a fresh one).
report_cmake_data() {
  local changed
  chroot "$root" dpkg-query -W cmake-data >/dev/null 2>&1 || return 0
  changed=$(chroot "$root" dpkg -V cmake-data)
  if [ -n "$changed" ]; then
    echo "$changed"
    say "note: cmake-data in the root differs from Debian's package (above)"
  else
    # shellcheck disable=SC2016  # ${Version} is dpkg-query's, not the shell's
    say "cmake-data $(chroot "$root" dpkg-query -W -f='${Version}' cmake-data) in the root:" \
        "as Debian ships it"
  fi
}

run_step() {  # run_step COMMAND: run it in the root, say how it went and how long it took
  local t status
  t=$(date +%s)
  say "running in the root: $1"
  set +e
  in_root "$1" 2>&1 | tee -a "$logs/commands.log"
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -ne 0 ]; then
    say "FAILED ($status) after $(elapsed "$t"): $1"
    report_cmake_data
    exit 1
  fi
  say "passed in $(elapsed "$t"): $1"
}

if [ "$deps_first" = 1 ]; then
  # The packages first, as part of the set-up (exit 2 when the mirror fails, three tries): a
  # download that fails is the machine's trouble, not the project's (CI uses this).
  for try in 1 2 3; do
    if in_root "bash scripts/install-deps.sh" >>"$logs/commands.log" 2>&1; then break; fi
    [ "$try" -lt 3 ] || die "scripts/install-deps.sh failed three times in the root (see $logs/commands.log)"
    say "scripts/install-deps.sh failed in the root (try $try of 3); again in 10 s"
    sleep 10
  done
fi
phase=commands
if [ "$mode" = configure ]; then
  # Without PyPI's torch 2.x, TensorFlow and MPIs (3.5, 0.6 and 0.15 GB that the full mode fetches):
  # the configure of the tutti build is what this mode checks.
  run_step "TUTTI_TORCH2=skip TUTTI_TF=skip TUTTI_MPIS=skip make configure"
  # make configure discards cmake's own output; show what it found (a second, quick configure).
  in_root "cmake build 2>&1 | grep -E '^-- tutti:'" || true
else
  run_step "make demo"
  run_step "make test"
fi
report_cmake_data
summary="$mode, $source_kind"
[ -z "$run_user" ] || summary+=", user $run_user"
[ -z "$cuda" ] || summary+=", CUDA $cuda"
say "PASS ($summary)"
