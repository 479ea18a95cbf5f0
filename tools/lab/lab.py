#!/usr/bin/env python3
"""A lab of N Debian 12 "hosts" on one machine, reachable over real ssh, for Ansible tests.

    tools/lab/lab.py up --hosts 2 --dir D     build (or reuse) the base image, start the hosts,
                                              write D/inventory.ini, D/known_hosts, D/ssh_config
    tools/lab/lab.py down --dir D             end every process of the lab by pid, delete its
                                              namespaces, remove its trees (never across a mount)
    tools/lab/lab.py image                    only build the base image (tools/lab/image.py)

Why this shape: the playbook must run against the lab exactly as against servers -- Ansible's
ssh connection, host key checking on, a key made for the test -- so each host is a clean
rootfs extracted from the base image, in its own network namespace (a veth to the controller,
10.231.<i>.2/24 behind 10.231.<i>.1) and its own mount namespace (proc, sys, /dev, a fresh
/run and /tmp, all of which vanish with it), with Debian's own ``sshd`` as its only started
process. Nothing is a localhost shortcut: the controller connects to the host's address.

State goes to D/lab.json (names, addresses, the sshd pid and its start time); ``down`` reads
it, so a second ``down`` finds nothing and does nothing. Shared with the controller on purpose,
as tools/fresh-check.sh does: /run/vsbench and /run/lock (so a ``vsbench cleanup`` on either
side never takes the other's live run for a dead one).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import image  # noqa: E402
from mounts import mounted_below  # noqa: E402

SUBNET_PREFIX = "10.231"
NETNS_PREFIX = "vlab"  # not vsb*: vsbench cleanup owns those names
SSH_READY_S = 30.0


class LabError(Exception):
    """A one-line reason the lab cannot do what was asked."""


def _run(argv: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kwargs)


def _start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: tells a pid from a later process that reuses it."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _used_octets() -> set[int]:
    out = _run(["ip", "-o", "-4", "addr", "show"]).stdout
    used = set()
    for line in out.splitlines():
        for word in line.split():
            if word.startswith(SUBNET_PREFIX + "."):
                used.add(int(word.split(".")[2]))
    return used


def _host_keys(rootfs: Path, name: str) -> str:
    """A fresh ed25519 host key in the host's /etc/ssh; returns its public line."""
    key = rootfs / "etc/ssh/ssh_host_ed25519_key"
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"root@{name}", "-f", str(key)])
    return (rootfs / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()[0:2]


def _configure_rootfs(rootfs: Path, name: str, address: str, client_pub: str) -> list[str]:
    host_pub = _host_keys(rootfs, name)
    (rootfs / "etc/ssh/sshd_config.d").mkdir(parents=True, exist_ok=True)
    (rootfs / "etc/ssh/sshd_config.d/vsbench-lab.conf").write_text(
        f"# written by tools/lab/lab.py\nListenAddress {address}\n"
        "HostKey /etc/ssh/ssh_host_ed25519_key\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nUseDNS no\n")
    ssh_dir = rootfs / "root/.ssh"
    ssh_dir.mkdir(mode=0o700, exist_ok=True)
    (ssh_dir / "authorized_keys").write_text(client_pub)
    os.chmod(ssh_dir / "authorized_keys", 0o600)
    (rootfs / "etc/hostname").write_text(name + "\n")
    (rootfs / "etc/hosts").write_text(f"127.0.0.1 localhost\n{address} {name}\n")
    return host_pub


def _inner(rootfs: str, name: str) -> None:
    """In the host's network, mount and UTS namespaces: mount, name the host, become sshd."""
    socket.sethostname(name)
    for argv in (["mount", "--make-rprivate", "/"], ["mount", "--bind", rootfs, rootfs],
                 ["mount", "-t", "proc", "proc", f"{rootfs}/proc"],
                 ["mount", "-t", "sysfs", "sysfs", f"{rootfs}/sys"], ["mount", "--rbind", "/dev", f"{rootfs}/dev"],
                 ["mount", "-t", "tmpfs", "-o", "mode=755", "tmpfs", f"{rootfs}/run"],
                 ["mount", "-t", "tmpfs", "tmpfs", f"{rootfs}/tmp"]):
        subprocess.run(argv, check=True)
    for shared in ("/run/vsbench", "/run/lock"):
        os.makedirs(shared, exist_ok=True)
        os.makedirs(rootfs + shared, exist_ok=True)
        subprocess.run(["mount", "--bind", shared, rootfs + shared], check=True)
    os.makedirs(f"{rootfs}/run/sshd", mode=0o755, exist_ok=True)
    os.chroot(rootfs)
    os.chdir("/")
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
    os.execve("/usr/sbin/sshd", ["/usr/sbin/sshd", "-D", "-e"], env)


def _wait_ssh(address: str, log: Path, deadline_s: float = SSH_READY_S) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            with socket.create_connection((address, 22), timeout=1.0) as sock:
                if sock.recv(64).startswith(b"SSH-"):
                    return
        except OSError:
            time.sleep(0.2)
    raise LabError(f"sshd on {address} did not answer within {deadline_s:.0f} s (see {log})")


def up(n_hosts: int, lab_dir: Path, kind: str = "clean") -> dict:
    if (lab_dir / "lab.json").exists():
        raise LabError(f"{lab_dir} already holds a lab (tools/lab/lab.py down --dir {lab_dir} first)")
    if not 1 <= n_hosts <= 20:
        raise LabError("--hosts must be between 1 and 20")
    lab_dir.mkdir(parents=True, exist_ok=True)
    base = image.build(lab_dir / "image.log", kind)
    lab_id = secrets.token_hex(2)
    client_key = lab_dir / "id_ed25519"
    _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"vsbench-lab-{lab_id}", "-f", str(client_key)])
    state = {"lab_id": lab_id, "dir": str(lab_dir.resolve()), "image": str(base), "hosts": []}
    free = [o for o in range(1, 255) if o not in _used_octets()]
    known = []
    inventory = ["# written by tools/lab/lab.py. Per host: no route to a mirror (vsbench_apt_update=false: apt",
                 "# installs from the cache the image carries), one host's run at a time (vsbench_run_throttle=1:",
                 "# the hosts share the controller's CPUs)", "[dut]"]
    try:
        for i in range(n_hosts):
            name = f"h{i + 1}"
            octet = free[i]
            host = {"name": name, "netns": f"{NETNS_PREFIX}-{lab_id}-{name}", "veth": f"vlab{lab_id}{name}",
                    "address": f"{SUBNET_PREFIX}.{octet}.2", "controller_address": f"{SUBNET_PREFIX}.{octet}.1",
                    "rootfs": str((lab_dir / "hosts" / name / "rootfs").resolve())}
            state["hosts"].append(host)
            _write_state(lab_dir, state)  # before each acquisition: down finds what up made
            rootfs = Path(host["rootfs"])
            rootfs.mkdir(parents=True)
            _run(["tar", "-C", str(rootfs), "-xpf", str(base)])
            host_pub = _configure_rootfs(rootfs, name, host["address"], (lab_dir / "id_ed25519.pub").read_text())
            known.append(f"{host['address']} {host_pub[0]} {host_pub[1]}")
            _run(["ip", "netns", "add", host["netns"]])
            _run(["ip", "link", "add", host["veth"], "type", "veth", "peer", "name", "eth0", "netns", host["netns"]])
            _run(["ip", "addr", "add", host["controller_address"] + "/24", "dev", host["veth"]])
            _run(["ip", "link", "set", host["veth"], "up"])
            for argv in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", host["address"] + "/24", "dev", "eth0"],
                         ["ip", "link", "set", "eth0", "up"],
                         ["ip", "route", "add", "default", "via", host["controller_address"]]):
                _run(["ip", "netns", "exec", host["netns"], *argv])
            log = lab_dir / "hosts" / name / "sshd.log"
            with log.open("ab") as out:
                proc = subprocess.Popen(["ip", "netns", "exec", host["netns"], "unshare", "--mount", "--uts",
                                         "--propagation", "private", "--", sys.executable,
                                         str(Path(__file__).resolve()), "_inner", str(rootfs), name], stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                        start_new_session=True)
            host["sshd_pid"] = proc.pid
            host["sshd_start"] = _start_time(proc.pid)
            _write_state(lab_dir, state)
            _wait_ssh(host["address"], log)
            # the lab's own settings as host vars: they must win over the playbook's
            # group_vars/all defaults, which an inventory's group vars do not
            inventory.append(f"{name} ansible_host={host['address']} vsbench_apt_update=false vsbench_run_throttle=1")
    except (subprocess.CalledProcessError, LabError, OSError) as exc:
        down(lab_dir)
        if isinstance(exc, subprocess.CalledProcessError):
            raise LabError(f"{' '.join(exc.cmd)} failed: {(exc.stderr or '').strip()}") from None
        raise
    (lab_dir / "known_hosts").write_text("\n".join(known) + "\n")
    key, known_file = client_key.resolve(), (lab_dir / "known_hosts").resolve()
    # ServerAlive: a host that dies mid-campaign is found unreachable in 15 s, not after TCP gives up
    ssh_args = (f"-o UserKnownHostsFile={known_file} -o StrictHostKeyChecking=yes -o BatchMode=yes "
                "-o ServerAliveInterval=5 -o ServerAliveCountMax=3")
    inventory += ["", "[dut:vars]", "ansible_user=root", f"ansible_ssh_private_key_file={key}",
                  f"ansible_ssh_common_args='{ssh_args}'", "ansible_python_interpreter=/usr/bin/python3"]
    (lab_dir / "inventory.ini").write_text("\n".join(inventory) + "\n")
    (lab_dir / "ssh_config").write_text(
        "".join(f"Host {h['name']}\n  HostName {h['address']}\n  User root\n  IdentityFile {key}\n"
                f"  UserKnownHostsFile {known_file}\n  StrictHostKeyChecking yes\n  BatchMode yes\n"
                for h in state["hosts"]))
    return state


def _write_state(lab_dir: Path, state: dict) -> None:
    tmp = lab_dir / "lab.json.tmp"
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(lab_dir / "lab.json")


def _pids_of_host(host: dict) -> list[int]:
    """The lab's own processes of one host: rooted in its rootfs, or in its network namespace."""
    pids = set()
    root = host["rootfs"]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            r = os.readlink(entry / "root")
        except OSError:
            continue
        if (r == root or r.startswith(root + "/")) and _alive(int(entry.name)):
            pids.add(int(entry.name))
    res = subprocess.run(["ip", "netns", "pids", host["netns"]], capture_output=True, text=True)
    if res.returncode == 0:
        pids.update(int(p) for p in res.stdout.split() if _alive(int(p)))
    pid = host.get("sshd_pid")
    if pid and _alive(pid) and _start_time(pid) == host.get("sshd_start"):
        pids.add(pid)
    pids.discard(os.getpid())
    return sorted(pids)


def _alive(pid: int) -> bool:
    """Running, not a zombie (a zombie waits for its parent, which may be a PID 1 that never reaps)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _end(pids: list[int], grace_s: float = 3.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        end = time.monotonic() + grace_s
        while time.monotonic() < end and any(_alive(p) for p in pids):
            time.sleep(0.1)


def crash(host: dict) -> list[int]:
    """``kill -9`` every process of one host, as a host that loses power: its connections
    close, new ones are refused. Returns the pids killed; ``down`` still removes the rest."""
    pids = _pids_of_host(host)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def down(lab_dir: Path) -> list[str]:
    """Tear the lab down; returns what could not be removed (empty: nothing left)."""
    state_file = lab_dir / "lab.json"
    if not state_file.exists():
        if (lab_dir / "hosts").exists():
            return [f"{lab_dir}/hosts exists but no lab.json says what it holds: left alone"]
        return []
    state = json.loads(state_file.read_text())
    left = []
    for host in state["hosts"]:
        _end(_pids_of_host(host))
        # a zombie's /proc entry lingers until reaped: wait for the pids to be gone
        still = _pids_of_host(host)
        if still:
            left.append(f"{host['name']}: processes {still} still run")
        if Path(f"/run/netns/{host['netns']}").exists():
            res = subprocess.run(["ip", "netns", "del", host["netns"]], capture_output=True, text=True)
            if res.returncode != 0:
                left.append(f"{host['name']}: netns {host['netns']}: {res.stderr.strip()}")
        if Path(f"/sys/class/net/{host['veth']}").exists():  # gone with the namespace's peer, normally
            subprocess.run(["ip", "link", "del", host["veth"]], capture_output=True)
    hosts_dir = lab_dir / "hosts"
    below = mounted_below(hosts_dir)
    if below:
        left.append(f"NOT removing {hosts_dir}: mounted below it: {' '.join(below)}")
    elif not left and hosts_dir.exists():
        subprocess.run(["rm", "-rf", "--one-file-system", str(hosts_dir)], check=False)
    if not left:
        for made in ("id_ed25519", "id_ed25519.pub", "known_hosts", "inventory.ini", "ssh_config", "lab.json"):
            (lab_dir / made).unlink(missing_ok=True)
    return left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tools/lab/lab.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    p_up = sub.add_parser("up", help="start N hosts")
    p_up.add_argument("--hosts", type=int, default=2)
    p_up.add_argument("--dir", type=Path, required=True)
    p_up.add_argument("--image", choices=image.KINDS, default="clean",
                      help="clean: runtime packages only downloaded (the playbook installs them); "
                           "preinstalled: installed (the long test's shortcut)")
    p_down = sub.add_parser("down", help="stop the lab in DIR and remove it")
    p_down.add_argument("--dir", type=Path, required=True)
    p_image = sub.add_parser("image", help="build the base image only")
    p_image.add_argument("--image", choices=image.KINDS, default="clean")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("tools/lab/lab.py: must run as root (namespaces, mounts, chroot)", file=sys.stderr)
        return 2
    try:
        if args.cmd == "image":
            print(image.build(Path("/tmp/vsbench-lab-image.log"), args.image))
        elif args.cmd == "up":
            state = up(args.hosts, args.dir, args.image)
            for h in state["hosts"]:
                print(f"lab: {h['name']} {h['address']} sshd pid {h['sshd_pid']}")
            print(f"lab: inventory {args.dir / 'inventory.ini'}")
        else:
            left = down(args.dir)
            for line in left:
                print(f"lab: {line}", file=sys.stderr)
            if left:
                return 3
            print(f"lab: {args.dir}: nothing left")
    except LabError as exc:
        print(f"tools/lab/lab.py: {exc}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as exc:
        print(f"tools/lab/lab.py: {' '.join(map(str, exc.cmd))} failed (exit {exc.returncode})", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "_inner":
        _inner(sys.argv[2], sys.argv[3])
    sys.exit(main())
