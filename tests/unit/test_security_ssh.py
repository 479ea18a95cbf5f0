"""ssh to generator hosts (plugins/trafficgen/remote_host.py, used by PROX and MoonGen):
site options are passed as argv items, never parsed into a shell string; the remote
command is quoted word by word; host keys are checked by default (docs/security.rst)."""

from __future__ import annotations

import shlex
from pathlib import Path

from plugins.trafficgen.remote_host import DEFAULT_SCP_COMMAND, DEFAULT_SSH_COMMAND, RemoteHost

ROOT = Path(__file__).resolve().parents[2]
#: Options that would accept any host key, or forget the known ones.
KEY_CHECK_OFF = ("stricthostkeychecking=no", "stricthostkeychecking=accept-new", "stricthostkeychecking no",
                 "userknownhostsfile=/dev/null", "userknownhostsfile /dev/null")


def test_host_keys_are_checked_by_default():
    """ssh's own default (StrictHostKeyChecking ask, the user's known_hosts) under BatchMode:
    an unknown or changed host key ends the connection instead of asking or accepting."""
    for default in (DEFAULT_SSH_COMMAND, DEFAULT_SCP_COMMAND):
        words = " ".join(default).lower()
        assert "batchmode=yes" in words
        assert not any(off in words for off in KEY_CHECK_OFF), default
    argv = RemoteHost.from_settings({"host": "gen1"}).ssh_argv(["true"])
    assert not any(off in " ".join(argv).lower() for off in KEY_CHECK_OFF)


def test_nothing_shipped_switches_host_key_checking_off():
    shipped = [p for d in ("vsbench", "plugins", "conf", "examples", "suites")
               for p in (ROOT / d).rglob("*") if p.is_file() and p.suffix in (".py", ".yaml", ".yml", ".j2")]
    found = [str(p.relative_to(ROOT)) for p in shipped
             if any(off in p.read_text(encoding="utf-8", errors="replace").lower() for off in KEY_CHECK_OFF)]
    assert found == []


def test_site_options_are_argv_items_passed_verbatim():
    site = ["ssh", "-o", "ProxyCommand=ssh -W %h:%p jump.example", "-o", "ControlPath=~/.ssh/cm-%r@%h:%p; touch x"]
    remote = RemoteHost.from_settings({"host": "gen1", "user": "lab", "port": 2222, "identity_file": "/k/id ed",
                                       "ssh_command": site, "scp_command": ["scp", "-o", "Compression=yes no"]})
    argv = remote.ssh_argv(["true"])
    assert argv[:len(site)] == site  # each option one item, spaces and ';' untouched
    assert argv[argv.index("-i") + 1] == "/k/id ed"
    assert argv[argv.index("-p") + 1] == "2222"
    assert argv[-3:-1] == ["--", "lab@gen1"]  # '--': a host cannot be read as an option
    scp = remote.scp_to_argv("/local/a b", "/remote/c d")
    assert scp[:3] == ["scp", "-o", "Compression=yes no"] and scp[-3:] == ["--", "/local/a b", "lab@gen1:/remote/c d"]


def test_the_remote_command_is_quoted_word_by_word():
    """ssh gives the remote side one command line: each argv item is quoted so a value with
    spaces, quotes, ``;`` or ``$(...)`` is one word there, never shell syntax."""
    hostile = ["prox", "-f", "/tmp/a b; rm -rf ~", "$(reboot)", "it's", "`id`"]
    line = RemoteHost(host="gen1").ssh_argv(hostile)[-1]
    assert shlex.split(line) == hostile


def test_a_host_that_looks_like_an_option_stays_a_host():
    argv = RemoteHost.from_settings({"host": "-oProxyCommand=touch /tmp/pwned"}).ssh_argv(["true"])
    assert argv.index("--") == argv.index("-oProxyCommand=touch /tmp/pwned") - 1


def test_a_remote_work_dir_must_be_the_ssh_users_own(tmp_path):
    """The check MoonGen runs after ``mkdir -p`` of its remote work dir, through the fake
    ssh (which runs the remote command here): our own directory passes; a link to one,
    or a directory of another user (as root), fails."""
    import os
    import subprocess

    fake = ROOT / "tests" / "fakes" / "ssh" / "fake_ssh"
    remote = RemoteHost(host="gen1", ssh_command=(str(fake),))
    mine = tmp_path / "mine"
    mine.mkdir()
    (tmp_path / "link").symlink_to(mine)
    def ok(path):
        return subprocess.run(remote.own_dir_check_argv(str(path)), check=False).returncode == 0
    assert ok(mine)
    assert not ok(tmp_path / "link") and not ok(tmp_path / "missing")
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        assert not ok(theirs)
