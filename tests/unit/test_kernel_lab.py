"""The kernel lab's host side: initramfs archive format, command line, shares, arguments.

The boot itself is exercised by the ``kernel_lab`` integration tests (they run inside it).
"""

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAB_DIR = ROOT / "tools" / "kernel-lab"


def _load_lab():
    spec = importlib.util.spec_from_file_location("kernel_lab", LAB_DIR / "kernel_lab.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["kernel_lab"] = module  # dataclasses look their module up while defining
    spec.loader.exec_module(module)
    return module


lab = _load_lab()


def test_initramfs_is_a_newc_archive_cpio_can_list(tmp_path):
    busybox = tmp_path / "busybox"
    busybox.write_bytes(b"\x7fELF" + b"x" * 1001)
    module = tmp_path / "9p.ko"
    module.write_bytes(b"module-bytes")
    data = lab.build_initramfs_bytes(busybox, [module], b"#!/bin/busybox sh\n")
    assert data.startswith(b"070701")
    assert len(data) % 4 == 0
    if shutil.which("cpio") is None:
        pytest.skip("cpio (Debian package cpio) is not installed to cross-check the archive")
    listing = subprocess.run(["cpio", "-it", "--quiet"], input=data, capture_output=True, check=True)
    names = listing.stdout.decode().split()
    assert {"init", "bin/busybox", "modules/00-9p.ko", "newroot", "xchg"} <= set(names)
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["cpio", "-id", "--quiet"], input=data, cwd=out, check=True)
    assert (out / "modules/00-9p.ko").read_bytes() == b"module-bytes"
    assert (out / "init").read_bytes() == b"#!/bin/busybox sh\n"


def test_static_detection_rejects_a_dynamic_binary(tmp_path):
    assert lab._is_static(Path("/bin/sh")) is False  # dash is dynamically linked
    not_elf = tmp_path / "script"
    not_elf.write_text("#!/bin/sh\n")
    assert lab._is_static(not_elf) is False


def test_rw_shares_drop_nested_directories_and_reject_missing(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    shares = lab._rw_shares([tmp_path / "a" / "b", tmp_path / "a"])
    assert shares == [("rw0", (tmp_path / "a").resolve())]
    with pytest.raises(lab.LabError, match="not a directory"):
        lab._rw_shares([tmp_path / "missing"])


def test_qemu_command_line_has_no_network_and_bounded_resources(tmp_path):
    config = lab.LabConfig(argv=["true"], cwd=tmp_path, rw_dirs=[], memory_mib=1024, cpus=2)
    argv = lab.qemu_argv("qemu", Path("/boot/vmlinuz-x"), tmp_path / "i.cpio", tmp_path, config,
                         [("rw0", tmp_path)], out_fd=7, err_fd=8)
    assert "-nodefaults" in argv and "-no-reboot" in argv
    assert not any(a.startswith("-net") or a == "-nic" for a in argv)
    assert argv[argv.index("-m") + 1] == "1024M"
    assert argv[argv.index("-smp") + 1] == "2"
    assert "tcg,thread=multi" in argv
    shares = [argv[i + 1] for i, a in enumerate(argv) if a == "-virtfs"]
    assert any("path=/," in s and "readonly=on" in s for s in shares)
    assert any(f"path={tmp_path}," in s and "mount_tag=rw0" in s for s in shares)
    assert "file,id=out,path=/proc/self/fd/7" in argv


@pytest.mark.parametrize(
    "argv, message",
    [
        ([], "no command given"),
        (["--cpus", "0", "--", "true"], "--cpus"),
        (["--memory-mib", "64", "--", "true"], "--memory-mib"),
    ],
)
def test_bad_arguments_are_one_line_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        lab.parse_args(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_command_after_double_dash_is_kept_verbatim():
    args = lab.parse_args(["--timeout", "30", "--", "python3", "-m", "pytest", "-k", "x or y"])
    assert args.command == ["python3", "-m", "pytest", "-k", "x or y"]
    assert args.timeout == 30


def test_missing_kernel_version_names_the_package():
    with pytest.raises(lab.LabError, match="linux-image-amd64"):
        lab.find_kernel("0.0.0-does-not-exist")


def test_root_is_never_shared_read_write():
    with pytest.raises(lab.LabError, match="refusing to share /"):
        lab._rw_shares([Path("/")])


def test_kernel_command_line_tells_the_initramfs_how_many_shares_to_wait_for(tmp_path):
    config = lab.LabConfig(argv=["true"], cwd=tmp_path, rw_dirs=[])
    argv = lab.qemu_argv("qemu", Path("/boot/vmlinuz-x"), tmp_path / "i.cpio", tmp_path, config,
                         [("rw0", tmp_path), ("rw1", tmp_path / "x")], out_fd=7, err_fd=8)
    assert "vsbench_lab_9p=4" in argv[argv.index("-append") + 1].split()
