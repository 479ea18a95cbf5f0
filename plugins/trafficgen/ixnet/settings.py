"""Settings of the ``ixnet`` generator: schema, defaults, credentials and port locations.

Credentials are the one thing here that must never travel: they may be given inline
(``password``, ``api_key``) or -- better, because the resolved configuration is written to
the run directory -- as the *name* of an environment variable (``password_env``,
``api_key_env``). :class:`Credentials` keeps them out of ``repr`` and offers a
:class:`Redactor` that scrubs them (and the session API key the server hands out) from any
text before it reaches a log line or an error message.

The schema accepts any scalar for a secret and says nothing about its value: the config
loader's error messages quote the offending value, and a password must not be quoted.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from vsbench.interfaces.plugin import PluginError

# "writeOnly" (JSON Schema's annotation for sensitive values) marks the keys a writer of the
# resolved configuration must redact; the plugin itself never logs or returns them.
_SECRET = {"type": ["string", "number", "null"], "writeOnly": True}
_ENV_NAME = {"type": ["string", "null"], "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"}
_PORT_LOCATION = {
    "oneOf": [
        {"type": "string", "minLength": 3},
        {"type": "object", "additionalProperties": False, "required": ["card", "port"],
         "properties": {"chassis": {"type": "string", "minLength": 1},
                        "card": {"type": "integer", "minimum": 1},
                        "port": {"type": "integer", "minimum": 1}}},
    ]
}

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "api_host": {"type": ["string", "null"]},
        "api_port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "username": {"type": ["string", "null"]},
        "password": _SECRET,
        "password_env": _ENV_NAME,
        "api_key": _SECRET,
        "api_key_env": _ENV_NAME,
        "verify_certificate": {"type": "boolean"},
        "ignore_env_proxy": {"type": "boolean"},
        "chassis": {"type": ["string", "null"]},
        "ports": {"type": "array", "items": _PORT_LOCATION},
        "force_ownership": {"type": "boolean"},
        "connect_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "request_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "link_up_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "stats_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "stop_timeout_s": {"type": "number", "exclusiveMinimum": 0},
        "poll_interval_s": {"type": "number", "exclusiveMinimum": 0},
        "drain_s": {"type": ["number", "null"], "minimum": 0},
        "latency_mode": {"enum": ["storeForward", "cutThrough", "forwardingDelay", "mef"]},
        "port_speed_gbps": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "max_flows": {"type": "integer", "minimum": 1},
    },
}

DEFAULTS: dict[str, Any] = {
    "api_host": None,
    "api_port": 443,
    "username": "admin",
    "password": None,
    "password_env": None,
    "api_key": None,
    "api_key_env": None,
    "verify_certificate": False,
    "ignore_env_proxy": False,
    "chassis": None,
    "ports": [],
    "force_ownership": False,
    "connect_timeout_s": 10.0,
    "request_timeout_s": 120.0,
    "link_up_timeout_s": 120.0,
    "stats_timeout_s": 60.0,
    "stop_timeout_s": 30.0,
    "poll_interval_s": 0.25,
    "drain_s": None,
    "latency_mode": "storeForward",
    "port_speed_gbps": None,
    "max_flows": 1 << 20,
}


def effective(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The plugin's settings with defaults for every key the configuration left out."""
    return {**DEFAULTS, **{k: v for k, v in settings.items() if k in DEFAULTS}}


# ---------------------------------------------------------------------------- credentials


@dataclass(frozen=True)
class Credentials:
    """Who the plugin logs in as. ``repr`` never shows the secrets."""

    username: str | None
    password: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)

    @property
    def secrets(self) -> list[str]:
        return [s for s in (self.password, self.api_key) if s]


def _from_env(var: str, key: str) -> str:
    value = os.environ.get(var)
    if not value:
        raise PluginError(f"ixnet: environment variable {var} (trafficgen.ixnet.{key}) is not set")
    return value


def credentials(settings: Mapping[str, Any]) -> Credentials:
    """Resolve inline or environment-held credentials; an API key wins over a password."""
    api_key = settings.get("api_key")
    if settings.get("api_key_env"):
        api_key = _from_env(settings["api_key_env"], "api_key_env")
    password = settings.get("password")
    if settings.get("password_env"):
        password = _from_env(settings["password_env"], "password_env")
    return Credentials(
        username=settings.get("username"),
        password=None if password is None else str(password),
        api_key=None if api_key is None else str(api_key),
    )


class Redactor:
    """Replaces every known secret in a text by ``***``."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        self._secrets: list[str] = []
        for s in secrets or []:
            self.add(s)

    def add(self, secret: str | None) -> None:
        if secret and secret not in self._secrets:
            self._secrets.append(secret)
            self._secrets.sort(key=len, reverse=True)

    def __call__(self, text: object) -> str:
        out = str(text)
        for s in self._secrets:
            out = out.replace(s, "***")
        return out


# ---------------------------------------------------------------------------- ports


@dataclass(frozen=True)
class PortLocation:
    """A test port on a chassis, as IxNetwork's assignPorts names it."""

    chassis: str
    card: int
    port: int

    def __str__(self) -> str:
        return f"{self.chassis};{self.card};{self.port}"


_LOCATION_RE = re.compile(r"^(?:(?P<chassis>[^;/\s]+)[;/])?(?P<card>\d+)[;/](?P<port>\d+)$")


def port_locations(settings: Mapping[str, Any]) -> list[PortLocation]:
    """``ports`` entries as locations: ``"chassis;card;port"``, ``"card/port"`` (with the
    default ``chassis``) or ``{chassis, card, port}``."""
    default_chassis = settings.get("chassis")
    out = []
    for i, entry in enumerate(settings.get("ports") or []):
        if isinstance(entry, Mapping):
            chassis, card, port = entry.get("chassis") or default_chassis, entry["card"], entry["port"]
        else:
            m = _LOCATION_RE.match(str(entry).strip())
            if m is None:
                raise PluginError(f"ixnet: trafficgen.ixnet.ports[{i}] = {entry!r} is not "
                                  "'chassis;card;port' or 'card/port'")
            chassis = m.group("chassis") or default_chassis
            card, port = int(m.group("card")), int(m.group("port"))
        if not chassis:
            raise PluginError(f"ixnet: trafficgen.ixnet.ports[{i}] names no chassis and "
                              "trafficgen.ixnet.chassis is not set")
        if card < 1 or port < 1:
            raise PluginError(f"ixnet: trafficgen.ixnet.ports[{i}]: card and port count from 1")
        out.append(PortLocation(str(chassis), int(card), int(port)))
    return out
