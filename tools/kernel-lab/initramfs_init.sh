#!/bin/busybox sh
# /init of the kernel lab's initramfs (see kernel_lab.py): load the few modules needed to
# mount the host's root over virtio-9p, lay a tmpfs overlay on it, mount the exchange and
# read-write shares, and hand over to the guest agent as PID 1.
B=/bin/busybox

fail() {
    echo "kernel-lab init: $*" >&2
    $B poweroff -f
}

$B mount -t devtmpfs dev /dev
$B mount -t proc proc /proc
$B mount -t sysfs sys /sys

for m in /modules/*.ko; do
    $B insmod "$m" || fail "insmod $m failed"
done

# Wait until every 9p device (root, exchange, read-write shares; the host passes their
# number as vsbench_lab_9p=N) is bound to the 9p transport.
want=2
for word in $($B cat /proc/cmdline); do
    case "$word" in vsbench_lab_9p=*) want="${word#vsbench_lab_9p=}" ;; esac
done
i=0
while [ ! -e /sys/bus/virtio/drivers/9pnet_virtio ] || \
      [ "$($B ls /sys/bus/virtio/drivers/9pnet_virtio | $B grep -c virtio)" -lt "$want" ]; do
    i=$((i + 1)); [ $i -gt 200 ] && fail "9p devices did not appear"
    $B usleep 10000
done

NINEP="trans=virtio,version=9p2000.L,msize=512000"
$B mount -t 9p -o "$NINEP,ro,cache=loose" hostroot /lower || fail "cannot mount host root"
$B mount -t tmpfs -o mode=0755 upper /upper || fail "cannot mount overlay tmpfs"
$B mkdir -p /upper/data /upper/work
$B mount -t overlay -o lowerdir=/lower,upperdir=/upper/data,workdir=/upper/work root /newroot \
    || fail "cannot mount overlay root"

R=/newroot
$B mount -t proc proc $R/proc
$B mount -t sysfs sys $R/sys
$B mount -t devtmpfs dev $R/dev
$B mkdir -p $R/dev/pts $R/dev/shm
$B mount -t devpts -o ptmxmode=0666 devpts $R/dev/pts
$B mount -t tmpfs -o mode=1777 shm $R/dev/shm
$B mount -t tmpfs -o mode=0755 run $R/run
$B mount -t tmpfs -o mode=1777 tmp $R/tmp
$B mount -t cgroup2 cgroup2 $R/sys/fs/cgroup 2>/dev/null
$B mkdir -p $R/run/kernel-lab $R/run/netns
$B mount -t 9p -o "$NINEP,cache=none" xchg $R/run/kernel-lab || fail "cannot mount exchange dir"

while read -r tag path; do
    [ -n "$tag" ] || continue
    $B mkdir -p "$R$path"
    $B mount -t 9p -o "$NINEP,cache=mmap" "$tag" "$R$path" || fail "cannot mount $path"
done < $R/run/kernel-lab/mounts

$B umount /proc /sys
$B umount -l /dev
exec $B switch_root $R /usr/bin/python3 -I -S /run/kernel-lab/agent.py
fail "switch_root failed"
