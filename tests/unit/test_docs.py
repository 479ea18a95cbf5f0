"""The documentation builds with warnings as errors, documents every command and testcase,
and its sample CI jobs only use options the CLI has."""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from vsbench.cli import main as cli
from vsbench.runner import testcases

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("docs")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(out / ".doctrees"), str(DOCS), str(out / "html")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out / "html"


def test_sphinx_builds_with_warnings_as_errors(built):
    assert (built / "index.html").is_file()
    for page in ("user_guide", "catalogue", "cli", "comparing", "ci"):
        assert (built / f"{page}.html").is_file(), page


def test_every_command_is_documented_and_dispatched(built, capsys):
    text = (built / "cli.html").read_text()
    for title, build in cli.PARSERS.items():
        assert f"usage: {title}" in text, title
        words = title.split()[1:]
        with pytest.raises(SystemExit) as exc:  # main() knows the command: --help exits 0
            cli.main([*words, "--help"])
        assert exc.value.code == 0, title
    for action in ("import", "list", "show", "trend", "delete"):
        assert f"usage: vsbench db {action}" in text
    assert "130" in text and "a gate failed" in text
    capsys.readouterr()


def test_the_catalogue_lists_every_testcase(built):
    text = (built / "catalogue.html").read_text()
    for case in testcases.load_all(testcases.default_testcase_dir()):
        assert f'id="{case.name.replace("_", "-")}"' in text and f"vsbench --test {case.name}" in text


def _vsbench_invocations(script: str) -> list[list[str]]:
    """The argument lists of every ``.venv/bin/vsbench`` command in a shell script."""
    calls: list[list[str]] = []
    for line in script.replace("\\\n", " ").splitlines():
        calls += _line_invocations(line)
    return calls


def _line_invocations(line: str) -> list[list[str]]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    calls, current = [], None
    for token in lexer:
        if token.endswith(".venv/bin/vsbench"):
            current = []
            calls.append(current)
        elif current is not None and set(token) <= set(";|&<>()"):
            current = None
        elif current is not None:
            current.append(re.sub(r"\$\{?[A-Z_]+\}?", "X", token))
    return calls


@pytest.mark.parametrize("name", ["nightly.gitlab-ci.yml", "Jenkinsfile"])
def test_the_sample_ci_jobs_use_real_options(name):
    text = (DOCS / "ci" / name).read_text()
    if name.endswith(".yml"):
        job = yaml.safe_load(text)["nightly-vsbench"]
        script = "\n".join(job["script"])
        gates = re.search(r"GATES=\$\{BASELINE:\+(.*)\}", script).group(1)
        script = script.replace("$GATES", gates.replace("$BASELINE", "abc123"))
    else:  # the shell steps of the Jenkinsfile: sh '...' and sh(script: '''...''')
        script = "\n".join(re.findall(r"sh '([^']*)'", text) + re.findall(r"'''(.*?)'''", text, re.S))
    calls = _vsbench_invocations(script)
    assert len(calls) >= 3, calls
    for argv in calls:
        sub = argv[0] if argv and argv[0] in {t.split()[1] for t in cli.PARSERS if " " in t} else None
        parser = cli.PARSERS[f"vsbench {sub}" if sub else "vsbench"]()
        parser.parse_args(argv[1:] if sub else argv)  # raises UsageError on an unknown option
