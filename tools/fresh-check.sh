#!/usr/bin/env bash
# Run the README's two commands as a new user would, on a clean Debian 12 root filesystem.
#
#   tools/fresh-check.sh                 tools/quickstart.sh, then tools/test.sh
#   tools/fresh-check.sh --quickstart    tools/quickstart.sh only
#   tools/fresh-check.sh --quick         tools/quickstart.sh, then tools/test.sh --quick
#   tools/fresh-check.sh --ci            the light variant CI runs: tools/setup.sh,
#                                        vsbench doctor, a one-frame-size quick start
#                                        (coarse search: 5 % width)
#   --cached    reuse the rootfs tarball of an earlier run (under a day old)
#   --keep      keep the work dir (rootfs, logs) for inspection
#   extra arguments after -- go to tools/quickstart.sh (vsbench)
#   VSBENCH_FRESH_TESTBED_LOCK=FILE   install first, then wait for a flock on FILE before
#                                        the steps that use the testbed (see tools/test.sh)
#
# What it does: mmdebstrap builds a Debian 12 rootfs ("important" priority, like a fresh
# install) from the host's Debian mirror; a clean `git clone` of this checkout's HEAD goes
# in /root/vsbench; then, inside a private mount namespace (unshare --mount: every mount
# made there vanishes with it), the rootfs is bind-mounted onto itself (`ip netns exec`
# needs / to be a mount point), proc, sys, /dev and a fresh /run are mounted, and the
# commands run chrooted. The kernel, network and CPUs are the host's (a fresh machine
# brings its own kernel; only the userland is fresh), as are the network's proxy settings and
# local CAs (/usr/local/share/ca-certificates). Shared with the host on purpose:
# /run/vsbench (run liveness locks, so neither side's `vsbench cleanup` takes the other's
# live run for a dead one) and /run/lock (the hugepage counter lock).
#
# Afterwards it checks that nothing is left: no vsb* netns, link or process (processes
# whose root is the rootfs are listed, then ended by pid). It never deletes a directory
# while anything is mounted below it: /proc/mounts is checked and rm runs with
# --one-file-system. Exit status: that of the first command that failed, else 0;
# 3 when residue was found.
set -euo pipefail

mode=full cached=0 keep=0 inner=0
qs_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quickstart) mode=quickstart ;;
    --quick) mode=quick ;;
    --ci) mode=ci ;;
    --cached) cached=1 ;;
    --keep) keep=1 ;;
    --inner) inner=1 ;;
    --) shift; qs_args=("$@"); break ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "tools/fresh-check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

BASE=${VSBENCH_FRESH_DIR:-/var/tmp/vsbench-fresh}
SUITE=bookworm
TARBALL=$BASE/debian12-$SUITE.tar

say() { echo "fresh-check: $*"; }

# ---------------------------------------------------------------- inside the namespace
if [ "$inner" = 1 ]; then
  work=$FRESH_WORK rootfs=$FRESH_WORK/rootfs
  mount --make-rprivate /
  mount --bind "$rootfs" "$rootfs"
  mount -t proc proc "$rootfs/proc"
  mount -t sysfs sysfs "$rootfs/sys"
  mount --rbind /dev "$rootfs/dev"
  mount -t tmpfs -o mode=755 tmpfs "$rootfs/run"
  mkdir -p "$rootfs/run/lock" "$rootfs/run/vsbench" /run/vsbench /run/lock
  mount --bind /run/lock "$rootfs/run/lock"
  mount --bind /run/vsbench "$rootfs/run/vsbench"
  mount -t tmpfs tmpfs "$rootfs/tmp"
  cp /etc/resolv.conf "$rootfs/etc/resolv.conf"

  in_root() {  # a clean environment, as a root login shell on the fresh machine would have
    local keep_env=()
    for v in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_INDEX_URL \
             PIP_EXTRA_INDEX_URL PIP_DEFAULT_TIMEOUT PIP_CERT REQUESTS_CA_BUNDLE SSL_CERT_FILE; do
      [ -n "${!v:-}" ] && keep_env+=("$v=${!v}")
    done
    chroot "$rootfs" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
      VSBENCH_SKIP_FRESH_CHECK=1 "${keep_env[@]}" "$@"
  }
  step() {  # step NAME COMMAND...: run in /root/vsbench, log to $work/NAME.log, show the tail
    local name=$1; shift
    local start=$SECONDS status=0
    say "== $name: $*"
    in_root /bin/bash -c 'cd /root/vsbench && exec "$@"' bash "$@" >"$work/$name.log" 2>&1 || status=$?
    tail -n "${FRESH_TAIL:-25}" "$work/$name.log" | sed "s/^/  $name| /"
    if [ "$status" != 0 ]; then
      # pytest's one line per failure (test id and assertion) may be far above the tail;
      # the whole log outlives the work dir, which is removed unless --keep
      grep -E '^(FAILED|ERROR) ' "$work/$name.log" | sed "s/^/  $name| /" || true
      cp "$work/$name.log" "$BASE/last-$name.log" && say "the whole log: $BASE/last-$name.log"
    fi
    say "== $name: exit $status after $((SECONDS - start)) s"
    return "$status"
  }

  # VSBENCH_FRESH_TESTBED_LOCK=FILE: the steps that build namespaces or forward traffic
  # (doctor, the quick start) first wait for a flock on FILE and hold it to the end, so a
  # caller can run the installation beside other work and the testbed steps after it
  # (tools/test.sh does, during its integration tests).
  testbed_lock() {
    [ -n "${VSBENCH_FRESH_TESTBED_LOCK:-}" ] || return 0
    local waited=$SECONDS
    exec 9>>"$VSBENCH_FRESH_TESTBED_LOCK"
    flock 9
    say "testbed lock $VSBENCH_FRESH_TESTBED_LOCK taken after $((SECONDS - waited)) s"
  }

  # processes whose root is the rootfs: what the commands left running
  leftover_pids() {
    local d r real_root
    real_root=$(readlink -f "$rootfs")
    for d in /proc/[0-9]*; do
      [ "${d#/proc/}" = $$ ] && continue
      r=$(readlink "$d/root" 2>/dev/null || true)
      [ "$r" = "$real_root" ] && echo "${d#/proc/}"
    done
  }
  end_pids() {  # end what we started, by pid: TERM, then KILL what is still there
    [ $# -gt 0 ] || return 0
    kill -TERM "$@" 2>/dev/null || true
    sleep 2
    kill -KILL "$@" 2>/dev/null || true
  }
  # interrupted: end what runs in the rootfs, so the namespace (and its mounts) goes too
  trap 'mapfile -t p < <(leftover_pids); end_pids "${p[@]}"; exit 130' INT TERM

  status=0
  case "$mode" in
    ci)
      step setup tools/setup.sh || status=$?
      [ "$status" = 0 ] && testbed_lock
      [ "$status" = 0 ] && { step doctor .venv/bin/vsbench doctor || status=$?; }
      [ "$status" = 0 ] && { step quickstart tools/quickstart.sh \
          --test-params "frame_sizes=[64];trial_duration=1;latency.trial_duration_s=1;search.relative_width=0.05" \
          "${qs_args[@]}" || status=$?; }
      ;;
    *)
      testbed_lock
      step quickstart tools/quickstart.sh "${qs_args[@]}" || status=$?
      if [ "$mode" != quickstart ]; then
        test_args=()
        [ "$mode" = quick ] && test_args=(--quick)
        step test tools/test.sh "${test_args[@]}" || { s=$?; [ "$status" = 0 ] && status=$s; }
      fi
      ;;
  esac

  # residue: what the commands left behind, seen from inside (netns, links, processes)
  residue=0
  netns=$(in_root ip netns list 2>/dev/null | awk '/^vsb/ {print $1}' || true)
  [ -n "$netns" ] && { say "RESIDUE netns: $(echo $netns)"; residue=1; }
  links=$(in_root ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep '^vsb' || true)
  new_links=$(comm -13 <(sort -u "$work/links.before") <(echo "$links" | sed '/^$/d' | sort -u) || true)
  [ -n "$new_links" ] && { say "RESIDUE links in the root netns: $(echo $new_links)"; residue=1; }
  mapfile -t left < <(leftover_pids)
  if [ "${#left[@]}" -gt 0 ]; then
    residue=1
    for pid in "${left[@]}"; do say "RESIDUE process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-120)"; done
    end_pids "${left[@]}"
  fi
  [ "$residue" = 0 ] && say "no residue: no vsb* netns, link or process left"
  if [ "$status" = 0 ] && [ "$residue" = 1 ]; then status=3; fi
  exit "$status"
fi

# ---------------------------------------------------------------- outside: prepare, run, tear down
[ "$(id -u)" -eq 0 ] || { echo "tools/fresh-check.sh: must run as root (mmdebstrap, unshare, chroot)" >&2; exit 2; }
for tool in mmdebstrap unshare chroot git; do
  command -v "$tool" >/dev/null || { echo "tools/fresh-check.sh: $tool missing (apt-get install --no-install-recommends mmdebstrap util-linux coreutils git)" >&2; exit 2; }
done
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$BASE"
work=$(mktemp -d "$BASE/run.XXXXXX")
rootfs=$work/rootfs
started=$SECONDS

mounted_below() { awk -v p="$1/" 'index($2, p) == 1 {print $2}' /proc/mounts; }
teardown() {
  local below users
  below=$(mounted_below "$work")
  if [ -n "$below" ]; then  # cannot happen (the namespace took its mounts with it); never rm then
    say "NOT removing $work: still mounted below it: $(echo $below)"
    return
  fi
  # a process still rooted in the rootfs keeps the namespace and its mounts alive
  users=$(for d in /proc/[0-9]*; do r=$(readlink "$d/root" 2>/dev/null) && \
          case "$r" in "$work"/*) echo "${d#/proc/}" ;; esac; done)
  if [ -n "$users" ]; then
    say "NOT removing $work: processes still run in it: $(echo $users)"
    return
  fi
  if [ "$keep" = 1 ]; then say "kept $work"; else rm -rf --one-file-system "$work"; fi
}
trap teardown EXIT

mirror=${VSBENCH_FRESH_MIRROR:-http://deb.debian.org/debian}
security=${VSBENCH_FRESH_SECURITY:-http://deb.debian.org/debian-security}
if [ "$cached" = 1 ] && [ -n "$(find "$TARBALL" -mmin -1440 2>/dev/null)" ]; then
  say "reusing $TARBALL"
else
  say "building a clean Debian 12 rootfs with mmdebstrap ($mirror)"
  mmdebstrap --variant=important --format=tar --quiet "$SUITE" "$TARBALL.part" \
    "deb $mirror $SUITE main" "deb $mirror $SUITE-updates main" \
    "deb $security $SUITE-security main" > "$work/mmdebstrap.log" 2>&1 \
    || { tail -5 "$work/mmdebstrap.log"; say "mmdebstrap failed"; exit 2; }
  mv "$TARBALL.part" "$TARBALL"
fi
mkdir "$rootfs"
tar -C "$rootfs" -xpf "$TARBALL"
git clone -q --no-hardlinks "$repo" "$rootfs/root/vsbench"
# The host's local CAs (e.g. a TLS-intercepting proxy's): a machine on this network has them
# too; installing ca-certificates (python3-pip pulls it in) adds them to the bundle pip uses.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$rootfs/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$rootfs/usr/local/share/ca-certificates/"
fi
say "rootfs ready in $((SECONDS - started)) s: $rootfs, vsbench $(git -C "$repo" rev-parse --short HEAD)"
ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep '^vsb' > "$work/links.before" || true

status=0
FRESH_WORK=$work unshare --mount --propagation private "$0" --inner \
  $( [ "$mode" = full ] || echo "--$mode" ) ${qs_args[@]:+-- "${qs_args[@]}"} || status=$?
say "finished in $((SECONDS - started)) s, exit $status"
exit "$status"
