"""PID 1 of the kernel lab guest: load modules, run the job's command, report, power off.

Runs under the host's own /usr/bin/python3 (the guest root *is* the host's root), with
``-I -S`` so nothing from the environment or site-packages is involved. Reads
``/run/kernel-lab/job.json`` written by ``kernel_lab.py`` and writes ``result.json`` next to
it; the command's stdout and stderr are the two virtio consoles the host wired to its own.
"""

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

XCHG = "/run/kernel-lab"
RB_POWER_OFF = 0x4321FEDC


def port(name, fallback):
    """The virtio-serial port the host named ``name`` (its stdout or stderr), for writing.

    Plain serial ports rather than consoles: a console is a tty whose line discipline
    rewrites newlines and can drop bytes around open and close.
    """
    base = "/sys/class/virtio-ports"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(f"{base}/{entry}/name") as f:
                if f.read().strip() == name:
                    return open(f"/dev/{entry}", "wb", buffering=0)
        except OSError:
            continue
    return open(fallback, "wb", buffering=0)


def uptime_s():
    with open("/proc/uptime") as f:
        return float(f.read().split()[0])


def host_time(path):
    """The host's clock, read as the mtime the host gives a file we write through 9p."""
    with open(path, "w") as f:
        f.write("x")
    return os.stat(path).st_mtime


def check_clock(result):
    """Keep the guest's time in step with the host's.

    Under emulation on a loaded host the kernel can calibrate the TSC wrongly at boot and
    then run its clock several times too fast or slow (seen: 3x), which would distort every
    duration measured inside. Compare half a second of guest time with the host's; if they
    disagree by more than 10 %, switch to the HPET clocksource, which QEMU drives from the
    host's clock (slower to read, but right).
    """
    path = f"{XCHG}/clock"
    g0, h0 = time.monotonic(), host_time(path)
    time.sleep(0.5)
    g1, h1 = time.monotonic(), host_time(path)
    ratio = (g1 - g0) / (h1 - h0) if h1 > h0 else 0.0
    result["clock_ratio"] = round(ratio, 3)
    if not 0.9 <= ratio <= 1.1:
        try:
            with open("/sys/devices/system/clocksource/clocksource0/current_clocksource", "w") as f:
                f.write("hpet")
        except OSError:
            pass
    with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
        result["clocksource"] = f.read().strip()


def power_off():
    os.sync()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.reboot(RB_POWER_OFF)
    os._exit(0)  # only reached when reboot() failed; PID 1 exiting ends the guest too


def main():
    result = {"returncode": 125, "boot_s": uptime_s()}
    out = port("stdout", "/dev/console")
    err = port("stderr", "/dev/console")
    try:
        with open(f"{XCHG}/job.json") as f:
            job = json.load(f)
        env = dict(job.get("env") or {})
        env.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        env["VSBENCH_KERNEL_LAB"] = "1"
        subprocess.run(["hostname", "kernel-lab"], check=False, stderr=subprocess.DEVNULL)
        subprocess.run(["ip", "link", "set", "lo", "up"], check=False)
        check_clock(result)
        modules = job.get("modules") or []
        if modules:
            # One modprobe for all: each start of kmod re-reads the module index over 9p.
            proc = subprocess.run(["modprobe", "-a", *modules], capture_output=True, text=True, check=False)
            if proc.returncode != 0:
                err.write(f"kernel-lab: modprobe {' '.join(modules)} failed: {proc.stderr.strip()}\n".encode())
        started = time.monotonic()
        child = subprocess.Popen(
            job["argv"], cwd=job.get("cwd") or "/", env=env,
            stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True,
        )
        try:
            result["returncode"] = child.wait(timeout=job.get("timeout_s") or None)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
            result["returncode"] = 124
            result["error"] = f"command timed out after {job['timeout_s']:g} s"
        except BaseException:
            os.killpg(child.pid, signal.SIGKILL)
            raise
        result["command_s"] = time.monotonic() - started
    except FileNotFoundError as exc:
        result["returncode"] = 127
        result["error"] = f"{exc.filename}: not found"
    except Exception as exc:  # noqa: BLE001 - PID 1 must always report and power off
        result["error"] = f"guest agent failed: {type(exc).__name__}: {exc}"
    finally:
        try:
            with open(f"{XCHG}/result.json.tmp", "w") as f:
                json.dump(result, f)
            os.rename(f"{XCHG}/result.json.tmp", f"{XCHG}/result.json")
        finally:
            power_off()


if __name__ == "__main__":
    if os.getpid() != 1:
        sys.exit("guest_agent.py runs only as PID 1 inside the kernel lab")
    main()
