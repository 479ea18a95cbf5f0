"""Configuration layering: defaults, conf files, testcase, --test-params, plain flags.

Order (later wins): every ``conf/*.yaml`` in file-name order; each ``--conf-file`` in the
order given; the testcase's own sections; ``--test-params``; ``--vswitch``/``--trafficgen``/
``--vnf``. Mappings are deep-merged, everything else (lists included) is replaced.

``--test-params "frame_sizes=[64];trial_duration=2"`` values are parsed as YAML scalars or
flow sequences with ``yaml.safe_load`` — never evaluated. A key is either a dotted path into
the configuration (``vswitch.ovs_dpdk.pmd_cpu_mask``) or a short name that is the last
component of exactly one known path (``frame_sizes`` → ``traffic.frame_sizes``); a short name
may omit a unit suffix (``trial_duration`` → ``traffic.trial_duration_s``).
"""

from __future__ import annotations

import copy
import difflib
import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import jsonschema
import yaml

from vsbench.system import yaml_text

SCHEMA_DIR = Path(__file__).resolve().parents[1] / "schemas"
UNIT_SUFFIXES = ("_s", "_ns", "_fps", "_bytes", "_pps", "_gbps", "_mb")
# Sections whose leaves short --test-params names resolve into, in order of preference.
SHORT_NAME_SECTIONS = ("traffic", "search", "latency", "dut", "overlay", "tcp", "testbed", "topology")


class ConfigError(Exception):
    """The configuration is wrong; ``str()`` is one line naming the file and field path."""


#: Where an installed wheel carries conf/, testcases/ and tools/packages/ (setup.py copies them).
INSTALLED_DATA = Path(__file__).resolve().parents[1] / "data"


def project_root() -> Path:
    """The directory holding ``conf/`` and ``testcases/``: ``$VSBENCH_HOME``, else the
    checkout this module runs from, else the copy an installed wheel carries in
    ``vsbench/data/``."""
    env = os.environ.get("VSBENCH_HOME")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "conf").is_dir() and (checkout / "testcases").is_dir():
        return checkout
    if (INSTALLED_DATA / "conf").is_dir():
        return INSTALLED_DATA
    return checkout


def default_conf_dir() -> Path:
    return project_root() / "conf"


@lru_cache(maxsize=None)
def load_schema(name: str) -> dict[str, Any]:
    with open(SCHEMA_DIR / name, encoding="utf-8") as f:
        return json.load(f)


# --------------------------------------------------------------------------- reading


def read_yaml_mapping(path: Path) -> dict[str, Any]:
    """A YAML file that must hold a mapping (an empty file is an empty mapping).

    Every YAML file a user hands vsbench comes through here (``--conf-file``, a testcase of
    ``--testcase-dir``, a suite file), so every way it can be unreadable is a one-line
    :class:`ConfigError` naming the file: a binary file or one in another encoding is not
    text, which ``read_text`` reports as ``UnicodeDecodeError`` -- neither an ``OSError``
    nor a YAML error, so it used to escape as an internal error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not a YAML text file (byte {exc.object[exc.start]:#04x} at offset "
                          f"{exc.start} is not UTF-8)") from None
    try:
        data = yaml_text.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{path}:{where}: malformed YAML: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def deep_merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A new mapping: ``override`` merged into ``base``; nested mappings merge, rest replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def load_layers(conf_dir: Path, conf_files: Iterable[Path]) -> dict[str, Any]:
    """Defaults from ``conf_dir/*.yaml`` then each ``--conf-file``."""
    if not conf_dir.is_dir():
        raise ConfigError(f"{conf_dir}: configuration directory not found (set VSBENCH_HOME?)")
    merged: dict[str, Any] = {}
    for path in sorted(conf_dir.glob("*.yaml")):
        merged = deep_merge(merged, read_yaml_mapping(path))
    for path in conf_files:
        merged = deep_merge(merged, read_yaml_mapping(Path(path)))
    return merged


# --------------------------------------------------------------------------- --test-params


def split_params(text: str) -> list[str]:
    """Split ``a=1;b=[1,2]`` on top-level ``;`` (not inside brackets or quotes)."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == ";" and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def parse_test_params(text: str) -> dict[str, Any]:
    """``"key=value;key2=[64,128]"`` → ``{"key": value, "key2": [64, 128]}`` (YAML values)."""
    params: dict[str, Any] = {}
    for item in split_params(text):
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"--test-params: expected key=value, got {item!r}")
        try:
            value = yaml_text.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            raise ConfigError(f"--test-params: {key}: cannot parse value {raw.strip()!r}") from None
        params[key] = value
    return params


def _leaf_paths(tree: Mapping[str, Any], prefix: str = "") -> list[str]:
    paths = []
    for key, value in tree.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            paths.extend(_leaf_paths(value, path + "."))
        else:
            paths.append(path)
    return paths


def resolve_key(key: str, tree: Mapping[str, Any]) -> str:
    """The dotted path a --test-params key names in ``tree`` (see module docstring)."""
    paths = _leaf_paths(tree)
    if "." in key:
        head = key.split(".")[0]
        if head in tree or key in paths:
            return key
        raise ConfigError(f"--test-params: unknown key {key!r}")
    candidates = []
    for section in SHORT_NAME_SECTIONS:
        for path in paths:
            parts = path.split(".")
            if parts[0] != section or len(parts) != 2:
                continue
            leaf = parts[1]
            if leaf == key or any(leaf == key + s for s in UNIT_SUFFIXES):
                candidates.append(path)
    if len(candidates) == 1:
        return candidates[0]
    if len(candidates) > 1:
        raise ConfigError(f"--test-params: {key!r} is ambiguous: {', '.join(candidates)}")
    short = sorted({p.split(".")[-1] for p in paths if p.split(".")[0] in SHORT_NAME_SECTIONS})
    close = difflib.get_close_matches(key, short, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ConfigError(f"--test-params: unknown key {key!r}{hint}")


def set_path(tree: dict[str, Any], path: str, value: Any) -> None:
    node = tree
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            node[part] = nxt
        node = nxt
    node[parts[-1]] = copy.deepcopy(value)


def get_path(tree: Mapping[str, Any], path: str, default: Any = None) -> Any:
    node: Any = tree
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


# --------------------------------------------------------------------------- validation


def _format_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(p) for p in error.absolute_path) or "(top level)"


def _one_line(error: jsonschema.ValidationError) -> str:
    """A short message for a schema error (jsonschema's own can be pages long)."""
    v = error.validator
    if v == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        known = sorted(error.schema.get("properties", {}))
        close = difflib.get_close_matches(extra[0], known, n=1) if extra else []
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown key {', '.join(repr(e) for e in extra)}{hint}"
    if v in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        word = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}[v]
        return f"{error.instance!r} must be {word} {error.validator_value}"
    if v == "type":
        return f"{error.instance!r} is not of type {error.validator_value}"
    if v == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(str, error.validator_value))}"
    return error.message.splitlines()[0][:200]


def validate(instance: Any, schema: Mapping[str, Any], where: str) -> None:
    """Raise ConfigError naming ``where`` and the offending field path, in one line."""
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(instance), key=lambda e: (len(e.absolute_path), str(e.absolute_path)))
    if errors:
        # Prefer the most specific error of the first offending branch.
        err = jsonschema.exceptions.best_match(errors)
        raise ConfigError(f"{where}: {_format_path(err)}: {_one_line(err)}")


def validate_config(config: Mapping[str, Any], where: str = "configuration") -> None:
    validate(config, load_schema("config.schema.json"), where)


def validate_plugin_settings(kind: str, name: str, plugin_cls: type, config: Mapping[str, Any]) -> None:
    """Validate ``config[kind][name]`` against the plugin's own ``settings_schema``."""
    schema = getattr(plugin_cls, "settings_schema", None)
    if not schema:
        return
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        raise ConfigError(f"{kind} plugin {name}: its settings_schema is not a valid JSON schema: "
                          f"{' '.join(exc.message.split())[:200]}") from None
    section = get_path(config, f"{kind}.{name}", {}) or {}
    validate(section, schema, f"configuration {kind}.{name}")


# --------------------------------------------------------------------------- secrets

REDACTED = "<redacted>"
#: Keys treated as secrets even when a plugin's schema forgets to mark them ``writeOnly``.
SECRET_KEY_WORDS = ("password", "passwd", "secret", "api_key", "apikey", "token", "private_key")


def _secret_paths(schema: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Paths of the properties a JSON schema marks ``writeOnly`` (sensitive values)."""
    paths = []
    for key, sub in (schema.get("properties") or {}).items():
        if not isinstance(sub, Mapping):
            continue
        if sub.get("writeOnly"):
            paths.append(prefix + (key,))
        paths.extend(_secret_paths(sub, prefix + (key,)))
    return paths


def _looks_secret(key: str) -> bool:
    lowered = key.lower()
    if lowered.endswith("_env") or lowered.endswith("_file"):
        return False  # the *name* of an environment variable or file holding the secret
    return any(word in lowered for word in SECRET_KEY_WORDS)


#: The password of a URL's user part (``scheme://user:password@host``), wherever it stands.
_URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:)(?P<password>[^/@\s]+)(?=@)")


def credential_in(key: str, value: str) -> str | None:
    """Why ``key=value`` (a label the user gives, such as a ``--tag``) carries a credential,
    or None: a key named like one, or a URL with a password in the value. Labels are stored
    and shown verbatim -- that is their point -- so they are refused rather than redacted."""
    if _looks_secret(key):
        return f"{key!r} is named like a credential"
    if redact_url_passwords(value) != value:
        return "the value is a URL with a password"
    return None


def redact_url_passwords(text: str) -> str:
    """``text`` with the password of every credentialed URL in it replaced: a database URL
    is a secret whatever key holds it (``db_url``, ``endpoint``), so names are not enough."""
    return _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED, text)


def _redact_by_name(node: Any) -> Any:
    if isinstance(node, Mapping):
        return {k: (REDACTED if _looks_secret(str(k)) and v not in (None, "") else _redact_by_name(v))
                for k, v in node.items()}
    if isinstance(node, list):
        return [_redact_by_name(v) for v in node]
    if isinstance(node, str):
        return redact_url_passwords(node)
    return node


def redact_secrets(config: Mapping[str, Any], plugin_classes: Mapping[str, type]) -> dict[str, Any]:
    """A copy of ``config`` safe to write to disk: every value a plugin's ``settings_schema``
    marks ``writeOnly``, and every key named like a credential, becomes ``<redacted>``, and
    so does the password of every URL with credentials (:func:`redact_url_passwords`).

    ``plugin_classes`` maps a kind (``trafficgen``...) to the selected plugin class.
    """
    out = copy.deepcopy(dict(config))
    for kind, cls in plugin_classes.items():
        schema = getattr(cls, "settings_schema", None) or {}
        name = getattr(cls, "name", "")
        for path in _secret_paths(schema):
            dotted = ".".join((kind, name) + path)
            if get_path(out, dotted) not in (None, ""):
                set_path(out, dotted, REDACTED)
    return _redact_by_name(out)
