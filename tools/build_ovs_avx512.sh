#!/bin/sh
# Build ovs-vswitchd with DPDK and OvS's AVX-512 implementations (dpcls avx512_gather,
# dpif_avx512, the avx512_* miniflow parsers), the same OvS and DPDK as Debian 12's
# openvswitch-switch-dpdk otherwise.
#
# Why: Debian builds OvS for baseline x86-64, without -msse4.2, and OvS 3.1 compiles its
# AVX-512 implementations only when __SSE4_2__ is defined (lib/dpif-netdev-lookup.c,
# DPCLS_IMPL_AVX512_CHECK): `ovs-appctl dpif-netdev/subtable-lookup-info-get` on Debian's
# build lists autovalidator and generic only. This script configures the same source as
# Debian's rules do (--with-dpdk=shared against Debian's libdpdk-dev 22.11) plus
# CFLAGS="-g -O2 -msse4.2 -mpopcnt", builds only vswitchd/ovs-vswitchd (~7 min on 2 cores)
# and installs it as $PREFIX/ovs-vswitchd-dpdk. The ovsdb-server, tools and schema stay
# Debian's (same 3.1.0 schema). Use it with
#     --test-params "vswitch.ovs_dpdk.vswitchd=$PREFIX/ovs-vswitchd-dpdk"
# (docs/switches.rst). It runs on a CPU with AVX-512F/BW/VL (VBMI for the *_vbmi_* parsers);
# elsewhere OvS lists the implementations as not available and vsbench refuses them.
#
# Usage: tools/build_ovs_avx512.sh SOURCE_DIR [PREFIX]
#   SOURCE_DIR  an Open vSwitch v3.1.0 source tree (git checkout of tag v3.1.0, or Debian's
#               `apt-get source openvswitch` with deb-src lines configured)
#   PREFIX      where to install (default /var/cache/vsbench/ovs-3.1.0-avx512)
# Build dependencies (Debian): apt-get install --no-install-recommends autoconf automake \
#   libtool gcc make pkg-config python3 libssl-dev libcap-ng-dev libnuma-dev libdpdk-dev
set -eu
src=${1:?usage: tools/build_ovs_avx512.sh SOURCE_DIR [PREFIX]}
prefix=${2:-/var/cache/vsbench/ovs-3.1.0-avx512}
src=$(cd "$src" && pwd)
[ -f "$src/vswitchd/bridge.c" ] || { echo "build_ovs_avx512: $src is not an Open vSwitch source tree" >&2; exit 2; }
for tool in autoreconf libtoolize make gcc nm pkg-config python3; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "build_ovs_avx512: $tool missing (apt-get install --no-install-recommends autoconf automake libtool gcc binutils make pkg-config python3)" >&2
        exit 2; }
done
pkg-config --exists libdpdk || { echo "build_ovs_avx512: libdpdk-dev missing (apt-get install libdpdk-dev)" >&2; exit 2; }
build="$src/_vsbench_avx512"
cd "$src"
[ -x configure ] || ./boot.sh
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ]; then
    PYTHON3=$(command -v python3) ../configure --prefix=/usr --localstatedir=/var --sysconfdir=/etc \
        --enable-ssl --with-dpdk=shared CFLAGS="-g -O2 -msse4.2 -mpopcnt"
fi
grep -q "define HAVE_LD_AVX512_GOOD 1" config.h || {
    echo "build_ovs_avx512: configure found no working AVX-512 toolchain (see $build/config.log)" >&2; exit 1; }
jobs=$(nproc 2>/dev/null || echo 2)
# the generated headers first (a target-only make does not build BUILT_SOURCES)
built=$(printf 'print-built:\n\t@echo $(BUILT_SOURCES)\n' | make -s -f Makefile -f - print-built)
# shellcheck disable=SC2086
make -j"$jobs" $built
make -j"$jobs" vswitchd/ovs-vswitchd
# the AVX-512 lookup's probe is compiled in only when the build has all it needs
nm vswitchd/ovs-vswitchd | grep -q ' dpcls_subtable_avx512_gather_probe$' || {
    echo "build_ovs_avx512: the build has no avx512_gather lookup (is -msse4.2 in CFLAGS?)" >&2; exit 1; }
mkdir -p "$prefix"
install -m 0755 vswitchd/ovs-vswitchd "$prefix/ovs-vswitchd-dpdk"
"$prefix/ovs-vswitchd-dpdk" --version | head -2
echo "installed $prefix/ovs-vswitchd-dpdk: use vswitch.ovs_dpdk.vswitchd=$prefix/ovs-vswitchd-dpdk"
