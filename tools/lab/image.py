"""The lab's base image: a clean Debian 12 rootfs plus what a provisioned server has.

Why a base image at all: a lab's servers come from PXE or a cloud image with an ssh server
and Python (Ansible's two needs) and nothing of vsbench. This module makes exactly that,
once, as a tarball every lab host is extracted from:

* the clean Debian 12 rootfs of tools/fresh-check.sh (its tarball cache is reused, built
  the same way with mmdebstrap when missing or older than a day);
* openssh-server and python3 installed;
* the .deb files of tools/packages/runtime.txt *downloaded, not installed*, into the image's
  apt cache, with the package lists. The lab hosts have no route to a mirror (their only
  link is a veth to the controller), so the playbook's ``apt`` task installs from this cache
  offline -- the same task a networked host runs against its mirror.

A second kind, ``preinstalled``, has the runtime packages installed instead of only
downloaded: the playbook's apt task then finds nothing to do. The long test uses it, because
installing them takes about 95 s per host on the shared 2-core machine (measured), more than
a test may cost; the playbook and every other step are the same.

The image carries no ssh host keys (each lab host gets its own) and no vsbench: the playbook
installs vsbench. The cache key is the hash of runtime.txt and the package list here, so a
changed runtime.txt builds a new image.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FRESH_DIR = Path(os.environ.get("VSBENCH_FRESH_DIR", "/var/tmp/vsbench-fresh"))
SUITE = "bookworm"
FRESH_TARBALL = FRESH_DIR / f"debian12-{SUITE}.tar"
# python3-apt: what Ansible's apt module drives apt with (it would fetch it from a mirror otherwise)
BASE_PACKAGES = ["openssh-server", "python3", "python3-apt"]
RUNTIME_TXT = REPO / "tools" / "packages" / "runtime.txt"
MAX_AGE_S = 24 * 3600


def runtime_packages(path: Path = RUNTIME_TXT) -> list[str]:
    """Package names of a tools/packages/*.txt file (comments and blank lines dropped)."""
    names = []
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(line)
    return names


KINDS = ("clean", "preinstalled")


def image_path(kind: str = "clean") -> Path:
    key = hashlib.sha256((RUNTIME_TXT.read_text() + " ".join(BASE_PACKAGES)).encode()).hexdigest()[:12]
    return FRESH_DIR / f"lab-{kind}-{SUITE}-{key}.tar"


def _fresh_tarball(log: Path) -> Path:
    """fresh-check.sh's clean rootfs tarball: reused when under a day old, else built alike."""
    if FRESH_TARBALL.exists() and time.time() - FRESH_TARBALL.stat().st_mtime < MAX_AGE_S:
        return FRESH_TARBALL
    mirror = os.environ.get("VSBENCH_FRESH_MIRROR", "http://deb.debian.org/debian")
    security = os.environ.get("VSBENCH_FRESH_SECURITY", "http://deb.debian.org/debian-security")
    part = FRESH_TARBALL.with_suffix(".tar.part")
    with log.open("ab") as out:
        subprocess.run(["mmdebstrap", "--variant=important", "--format=tar", "--quiet", SUITE, str(part),
                        f"deb {mirror} {SUITE} main", f"deb {mirror} {SUITE}-updates main",
                        f"deb {security} {SUITE}-security main"], stdout=out, stderr=out, check=True)
    part.rename(FRESH_TARBALL)
    return FRESH_TARBALL


def _inner(rootfs: str, kind: str) -> None:
    """Runs in a private mount namespace: chroot into the rootfs, install, download."""
    for argv in (["mount", "--make-rprivate", "/"], ["mount", "-t", "proc", "proc", f"{rootfs}/proc"],
                 ["mount", "-t", "sysfs", "sysfs", f"{rootfs}/sys"], ["mount", "--rbind", "/dev", f"{rootfs}/dev"],
                 ["mount", "-t", "tmpfs", "tmpfs", f"{rootfs}/run"], ["mount", "-t", "tmpfs", "tmpfs", f"{rootfs}/tmp"]):
        subprocess.run(argv, check=True)
    Path(rootfs, "etc/resolv.conf").write_bytes(Path("/etc/resolv.conf").read_bytes())
    env = ["/usr/bin/env", "-i", "HOME=/root", "LANG=C.UTF-8", "DEBIAN_FRONTEND=noninteractive",
           "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
    apt = ["apt-get", "-y", "-q", "--no-install-recommends"]
    subprocess.run(["chroot", rootfs, *env, "apt-get", "-q", "update"], check=True)
    subprocess.run(["chroot", rootfs, *env, *apt, "install", *BASE_PACKAGES], check=True)
    only = ["--download-only"] if kind == "clean" else []
    subprocess.run(["chroot", rootfs, *env, *apt, "install", *only, *runtime_packages()], check=True)
    # no host keys in the image: each lab host gets its own (lab.py)
    for key in Path(rootfs, "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    # an image keeps downloaded .debs (Debian's docker-clean hook would drop them)
    Path(rootfs, "etc/apt/apt.conf.d/docker-clean").unlink(missing_ok=True)


def build(log: Path, kind: str = "clean") -> Path:
    """The base image's path, built when missing (minutes: apt over the network)."""
    target = image_path(kind)
    if target.exists():
        return target
    FRESH_DIR.mkdir(parents=True, exist_ok=True)
    work = Path(subprocess.run(["mktemp", "-d", str(FRESH_DIR / "lab-image.XXXXXX")], check=True,
                               capture_output=True, text=True).stdout.strip())
    rootfs = work / "rootfs"
    try:
        rootfs.mkdir()
        subprocess.run(["tar", "-C", str(rootfs), "-xpf", str(_fresh_tarball(log))], check=True)
        with log.open("ab") as out:
            subprocess.run(["unshare", "--mount", "--propagation", "private", "--", sys.executable,
                            str(Path(__file__).resolve()), "_inner", str(rootfs), kind], stdout=out, stderr=out, check=True)
        part = target.with_suffix(".tar.part")
        subprocess.run(["tar", "-C", str(rootfs), "--one-file-system", "-cpf", str(part), "."], check=True)
        part.rename(target)
    finally:
        from mounts import mounted_below  # the namespace took its mounts; never rm under one

        if not mounted_below(work):
            subprocess.run(["rm", "-rf", "--one-file-system", str(work)], check=False)
    return target


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "_inner":
    _inner(sys.argv[2], sys.argv[3])
