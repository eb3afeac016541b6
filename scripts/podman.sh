# shellcheck shell=bash
# podman.sh: what make image (scripts/build-images.sh) and the images tests need of podman, on a
# machine whose podman was never set up: sourced, it defines
#   podman_build_args        prints, one per line, the flags a `podman build` here needs: the
#                            ulimits capped at this shell's hard limits (root without
#                            CAP_SYS_RESOURCE cannot raise them, and podman's defaults are above),
#                            runc where crun cannot run on this machine's cgroups, host network
#                            (a build's own network needs netavark or CNI and iptables)
#   podman_private STATE_DIR podman for a test only: its own containers.conf (the same settings) and
#                            storage under STATE_DIR, exported as CONTAINERS_CONF and
#                            CONTAINERS_STORAGE_CONF, so that no image or container of a user's is
#                            seen or touched
#   podman_base_image NAME   makes sure image NAME (debian:bookworm) is there: pulled where a
#                            registry answers, else made from Debian's packages with mmdebstrap
#                            (minbase) and imported under that name. Returns 1 with the reason.

# The hard limits of this shell, which podman's container inherits: a container may set its soft
# and hard limits at most that high. nproc is capped at pid_max as well (runc refuses more here).
podman_ulimits() {
  local nofile nproc pid_max
  nofile=$(ulimit -Hn)
  nproc=$(ulimit -Hu)
  pid_max=$(cat /proc/sys/kernel/pid_max 2>/dev/null || echo 32768)
  [ "$nofile" = unlimited ] && nofile=1048576
  [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pid_max" ] && nproc=$pid_max
  echo "nofile=$nofile:$nofile nproc=$nproc:$nproc"
}

# crun needs a pure cgroup v2 (or v1) hierarchy; on a hybrid one it refuses to start anything,
# where runc works. Prefer runc when it is installed and the hierarchy is not pure v2.
podman_runtime() {
  if command -v runc >/dev/null 2>&1 &&
    [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" != cgroup2fs ]; then
    echo runc
  fi
}

podman_build_args() {
  local limit runtime
  for limit in $(podman_ulimits); do echo "--ulimit=$limit"; done
  runtime=$(podman_runtime)
  [ -z "$runtime" ] || echo "--runtime=$runtime"
  echo "--network=host"
}

podman_private() {
  local dir limits runtime ulimits=() limit
  dir=$(realpath -m "$1")
  mkdir -p "$dir/storage" "$dir/run"
  limits=$(podman_ulimits)
  for limit in $limits; do ulimits+=("\"$limit\""); done
  runtime=$(podman_runtime)
  {
    echo "[containers]"
    echo "default_ulimits = [$(
      IFS=,
      echo "${ulimits[*]}"
    )]"
    echo "[engine]"
    [ -z "$runtime" ] || echo "runtime = \"$runtime\""
    # No systemd runs here to own the containers' cgroups, nor journald for the events.
    [ -d /run/systemd/system ] || echo 'cgroup_manager = "cgroupfs"'
    echo 'events_logger = "file"'
  } >"$dir/containers.conf"
  cat >"$dir/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$dir/run"
CONF
  export CONTAINERS_CONF=$dir/containers.conf CONTAINERS_STORAGE_CONF=$dir/storage.conf
}

podman_base_image() {
  local name=$1 full tmp
  podman image exists "$name" && return 0
  # FROM debian:bookworm means docker.io/library/debian:bookworm.
  case $name in
    */*/*) full=$name ;;
    */*) full=docker.io/$name ;;
    *) full=docker.io/library/$name ;;
  esac
  podman image exists "$full" && return 0
  if podman pull --quiet "$full" >/dev/null 2>&1; then
    echo "podman: pulled $full"
    return 0
  fi
  case $name in
    debian:bookworm | docker.io/library/debian:bookworm) ;;
    *)
      echo "podman: cannot pull $full and only debian:bookworm can be made here" >&2
      return 1
      ;;
  esac
  command -v mmdebstrap >/dev/null 2>&1 || {
    echo "podman: no registry answers for $full, and mmdebstrap (apt install mmdebstrap) is not here to make it" >&2
    return 1
  }
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/tutti-base.XXXXXX")
  echo "podman: no registry answers for $full; making it from Debian's packages (mmdebstrap, minbase)"
  if ! mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm "$tmp/rootfs.tar" \
    >"$tmp/log" 2>&1; then
    echo "podman: mmdebstrap failed:" >&2
    tail -n 5 "$tmp/log" >&2
    rm -rf "$tmp"
    return 1
  fi
  podman import --quiet "$tmp/rootfs.tar" "$full" >/dev/null || {
    rm -rf "$tmp"
    return 1
  }
  rm -rf "$tmp"
}
