#!/bin/sh
# Build PROX (OPNFV samplevnf VNFs/DPPD-PROX) against Debian 12's DPDK 22.11 into a cache
# directory, from a source tarball or tree the caller gives (never fetched at run time).
#
# Why a script: PROX is not packaged anywhere, and Debian's libdpdk-dev lacks four
# driver-SDK headers PROX includes (bus_pci_driver.h and what it includes: bus_driver.h,
# dev_driver.h, ethdev_driver.h). They come from Debian's own dpdk source package of the
# installed libdpdk-dev version, fetched by apt with a PRIVATE lists directory and source
# list (an `apt-get update` with another source list would delete the system's lists).
#
# Usage: tools/build_prox.sh SOURCE [CACHE_ROOT]
#   SOURCE      samplevnf tarball (*.tar.gz) or tree holding VNFs/DPPD-PROX (or DPPD-PROX itself)
#   CACHE_ROOT  default /var/cache/vsbench; the binary goes to CACHE_ROOT/prox-<key>/prox,
#               <key> the samplevnf commit named in the tarball/tree, else a content hash
# Idempotent: a second call with the same source prints the cached binary and builds nothing.
# Prints the binary's path on its last line: use it as trafficgen.prox.binary.
# Build dependencies (Debian 12): apt-get install --no-install-recommends libdpdk-dev meson
#   ninja-build pkg-config gcc liblua5.3-dev libedit-dev libpcap-dev libncurses-dev xz-utils
set -eu
src=${1:?usage: tools/build_prox.sh SOURCE [CACHE_ROOT]}
cache=${2:-/var/cache/vsbench}
die() { echo "build_prox: $*" >&2; exit 2; }
[ -e "$src" ] || die "$src does not exist"
src=$(cd "$(dirname "$src")" && pwd)/$(basename "$src")

for tool in meson ninja pkg-config cc tar xz; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool missing (apt-get install --no-install-recommends meson ninja-build pkg-config gcc xz-utils)"
done
pkg-config --exists libdpdk || die "libdpdk-dev missing (apt-get install --no-install-recommends libdpdk-dev)"
for pc in lua5.3 libedit libpcap ncurses; do
    pkg-config --exists "$pc" || die "$pc development files missing (apt-get install --no-install-recommends liblua5.3-dev libedit-dev libpcap-dev libncurses-dev)"
done

# The cache key: the samplevnf commit in the name (samplevnf-prox-<commit>.tar.gz,
# samplevnf-<commit>/), else the first 12 hex digits of the tarball's / tree's sha256.
base=$(basename "$src")
key=$(printf '%s\n' "$base" | sed -n 's/^samplevnf-\(prox-\)\{0,1\}\([0-9a-f]\{7,40\}\).*/\2/p')
if [ -z "$key" ]; then
    if [ -f "$src" ]; then
        key=$(sha256sum "$src" | cut -c1-12)
    else
        key=$(cd "$src" && find . -type f \( -name '*.c' -o -name '*.h' -o -name meson.build \) -print0 \
              | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-12)
    fi
fi
out="$cache/prox-$key"
if [ -x "$out/prox" ] && "$out/prox" -h 2>&1 | grep -q "CONFIG_FILE"; then
    echo "build_prox: cached, nothing to build"
    echo "$out/prox"
    exit 0
fi
mkdir -p "$out"

# 1. the four driver-SDK headers, from the source package of the installed DPDK version
dpdk_ver=$(dpkg-query -W -f='${Version}' libdpdk-dev 2>/dev/null) || die "libdpdk-dev is not installed as a Debian package"
hdr="$cache/dpdk-sdk-headers-$dpdk_ver"
headers="bus_pci_driver.h bus_driver.h dev_driver.h ethdev_driver.h"
have=1
for h in $headers; do [ -f "$hdr/$h" ] || have=0; done
if [ "$have" = 0 ]; then
    apt_dir=$(mktemp -d /tmp/vsbench-prox-apt.XXXXXX)
    trap 'rm -rf "$apt_dir"' EXIT
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/src"
    . /etc/os-release
    codename=${VERSION_CODENAME:-bookworm}
    {
        echo "deb-src http://deb.debian.org/debian $codename main"
        echo "deb-src http://deb.debian.org/debian $codename-updates main"
        echo "deb-src http://deb.debian.org/debian-security $codename-security main"
    } > "$apt_dir/sources.list"
    # private lists and source list: the system's package lists stay as they are
    set -- -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Etc::SourceList=$apt_dir/sources.list" \
        -o "Dir::Etc::SourceParts=/dev/null" -o "APT::Sandbox::User=root"
    apt-get "$@" -qq update >/dev/null || die "apt-get update of the private deb-src list failed"
    (cd "$apt_dir/src" && apt-get "$@" -qq source --download-only "dpdk=$dpdk_ver" >/dev/null) \
        || die "cannot fetch Debian's dpdk $dpdk_ver source package (it holds the headers libdpdk-dev lacks)"
    orig=$(ls "$apt_dir"/src/dpdk_*.orig.tar.* 2>/dev/null | head -1)
    [ -n "$orig" ] || die "no dpdk orig tarball in the fetched source package"
    tar -xf "$orig" -C "$apt_dir/src" --wildcards '*/drivers/bus/pci/bus_pci_driver.h' \
        '*/lib/eal/include/bus_driver.h' '*/lib/eal/include/dev_driver.h' '*/lib/ethdev/ethdev_driver.h'
    mkdir -p "$hdr"
    for h in $headers; do
        find "$apt_dir/src" -name "$h" -exec cp {} "$hdr/" \;
        [ -f "$hdr/$h" ] || die "$h not found in Debian's dpdk $dpdk_ver source"
    done
fi

# 2. the PROX tree (a tarball is unpacked into the cache, a tree copied: the build never
#    writes into the caller's source)
work="$out/src"
rm -rf "$work"
mkdir -p "$work"
if [ -f "$src" ]; then
    tar -xf "$src" -C "$work"
else
    cp -a "$src/." "$work/"
fi
prox_dir=$(find "$work" -maxdepth 4 -type f -name meson.build -path '*DPPD-PROX/meson.build' | head -1)
[ -n "$prox_dir" ] || die "$src holds no VNFs/DPPD-PROX/meson.build"
prox_dir=$(dirname "$prox_dir")

# 3. meson + ninja (about a minute on 2 cores)
(cd "$prox_dir" && CFLAGS="-I$hdr" meson setup build >"$out/meson.log" 2>&1) \
    || { tail -20 "$out/meson.log" >&2; die "meson setup failed (log $out/meson.log)"; }
ninja -C "$prox_dir/build" >"$out/ninja.log" 2>&1 \
    || { tail -20 "$out/ninja.log" >&2; die "ninja failed (log $out/ninja.log)"; }
install -m 0755 "$prox_dir/build/prox" "$out/prox.new"
mv "$out/prox.new" "$out/prox"
rm -rf "$work"
echo "build_prox: built PROX $key against DPDK $dpdk_ver"
echo "$out/prox"
