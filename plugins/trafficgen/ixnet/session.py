"""Connecting to an IxNetwork API server: session, ports, and turning its errors into one line.

``ixnetwork_restpy`` does the HTTP: it probes the address for http/https and the platform
(``Server`` header), logs in (``POST /api/v1/auth/session`` → API key), creates and starts
a session (``POST /api/v1/sessions`` then the asynchronous ``operations/start``), and maps
non-2xx answers to its own exception classes. This module adds what restpy leaves to the
caller: a TCP pre-check that names *why* an address is unreachable, a timeout on every
request (restpy sets none, so a hung server would hang the run), the session name carrying
the run id (so ``vsbench cleanup`` can recognise a leftover), and :func:`api_call`, which
converts any failure into a :class:`PluginError` naming the generator and the address with
secrets scrubbed.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from vsbench.interfaces.plugin import PluginError

from vsbench_plugins.trafficgen.ixnet.settings import Credentials, PortLocation, Redactor

log = logging.getLogger(__name__)

_RESTPY_LOGGER = "ixnetwork_restpy.connection"


def quiet_restpy() -> None:
    """restpy attaches a stdout handler to its logger unless one exists; give it a
    silent one so library code never prints, and keep its level at CRITICAL (its request
    tracing would log the login payload)."""
    logger = logging.getLogger(_RESTPY_LOGGER)
    if not any(isinstance(h, logging.NullHandler) for h in logger.handlers):
        logger.addHandler(logging.NullHandler())


def _first_line(text: str, limit: int = 240) -> str:
    for line in str(text).splitlines():
        line = line.strip()
        if line:
            return line[:limit]
    return ""


@contextlib.contextmanager
def api_call(what: str, address: str, redact: Callable[[object], str]) -> Iterator[None]:
    """Run a block of restpy calls; any failure becomes one PluginError line."""
    from ixnetwork_restpy.errors import IxNetworkError, UnauthorizedError
    from requests.exceptions import RequestException, Timeout

    try:
        yield
    except PluginError:
        raise
    except UnauthorizedError as exc:
        log.debug("ixnet: %s: %s", what, redact(exc))
        raise PluginError(f"ixnet: {what}: IxNetwork API server {address} refused the "
                          f"credentials (HTTP 401): {redact(_first_line(exc.message))}") from None
    except IxNetworkError as exc:
        log.debug("ixnet: %s: %s", what, redact(exc))
        status = f" (HTTP {exc.status_code})" if exc.status_code else ""
        raise PluginError(f"ixnet: {what} failed on IxNetwork API server {address}{status}: "
                          f"{redact(_first_line(exc.message))}") from None
    except Timeout:
        raise PluginError(f"ixnet: {what}: IxNetwork API server {address} did not answer in time "
                          "(trafficgen.ixnet.request_timeout_s)") from None
    except RequestException as exc:
        log.debug("ixnet: %s: %s", what, redact(exc))
        raise PluginError(f"ixnet: {what}: lost the connection to IxNetwork API server {address}: "
                          f"{type(exc).__name__}") from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        log.debug("ixnet: %s: unexpected answer: %s", what, redact(exc))
        raise PluginError(f"ixnet: {what}: unexpected answer from IxNetwork API server {address}: "
                          f"{redact(_first_line(str(exc)))}") from None


def check_reachable(host: str, port: int, timeout_s: float) -> None:
    """Fail fast, and say why, when nothing listens at ``host:port``."""
    address = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return
    except ConnectionRefusedError:
        reason = "connection refused"
    except socket.gaierror as exc:
        reason = f"cannot resolve the host name ({exc.strerror})"
    except (socket.timeout, TimeoutError):
        reason = f"no answer within {timeout_s:g} s"
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    raise PluginError(f"ixnet: cannot reach IxNetwork API server {address}: {reason}")


def _with_timeout(session: Any, timeout_s: float) -> None:
    """Give every request restpy makes a timeout (it sets one only on its probe)."""
    original = session.request

    def request(*args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("timeout", timeout_s)
        return original(*args, **kwargs)

    session.request = request


@dataclass
class Connection:
    """A logged-in test platform and the session vsbench created on it."""

    test_platform: Any
    sessions: Any  # restpy Sessions holding exactly our session
    ixnetwork: Any
    platform: str
    build_number: str
    session_id: int


def connect(host: str, port: int, creds: Credentials, *, session_name: str,
            verify_certificate: bool, ignore_env_proxy: bool, connect_timeout_s: float,
            request_timeout_s: float, redact: Redactor,
            on_session_created: Callable[[Any], None]) -> Connection:
    """Log in and create a session. ``on_session_created(sessions)`` is called as soon as
    the session exists on the server, before it is started, so its removal can be
    registered before anything else can fail."""
    from ixnetwork_restpy import TestPlatform
    from ixnetwork_restpy.errors import ConnectionError as RestpyConnectionError

    address = f"{host}:{port}"
    check_reachable(host, port, connect_timeout_s)
    quiet_restpy()
    tp = None
    with api_call("connect", address, redact):
        try:
            tp = TestPlatform(host, rest_port=port, verify_cert=verify_certificate,
                              ignore_env_proxy=ignore_env_proxy, trace="none")
        except RestpyConnectionError:  # its probe found no IxNetwork answer on any port/scheme
            pass
    if tp is None:  # raised here, not in the except block, so no traceback keeps restpy's
        # half-built connection (and its sockets) alive
        raise PluginError(f"ixnet: connect: nothing at {address} answers as an IxNetwork API "
                          "server (tried http and https)")
    if int(tp.RestPort) != int(port):
        log.warning("ixnet: %s did not answer; restpy fell back to port %s", address, tp.RestPort)
        address = f"{host}:{tp.RestPort}"
    http = tp._connection._session
    _with_timeout(http, request_timeout_s)
    try:
        return _log_in_and_create(tp, address, creds, session_name, redact, on_session_created)
    except BaseException:
        http.close()  # keep-alive sockets; a created session closes it when removed
        raise


def _log_in_and_create(tp: Any, address: str, creds: Credentials, session_name: str,
                       redact: Redactor, on_session_created: Callable[[Any], None]) -> "Connection":
    with api_call("log in", address, redact):
        if creds.api_key:
            tp.ApiKey = creds.api_key
            tp.Sessions.find()  # any authenticated request: a wrong key fails here, not later
        elif creds.username and creds.password:
            tp.Authenticate(creds.username, creds.password)
        redact.add(tp.ApiKey)
    sessions = tp.Sessions
    with api_call("create session", address, redact):
        # Sessions.add() creates and starts in one call; do the two steps ourselves
        # (restpy's Base._create is what add() uses) so the removal is registered the
        # moment the session exists, before the long asynchronous start.
        sessions._create({"applicationType": "ixnrest"})
    on_session_created(sessions)
    with api_call("start session", address, redact):
        sessions.Start()
        sessions.Name = session_name
        ixnetwork = sessions.Ixnetwork
        build = str(ixnetwork.Globals.BuildNumber)
    log.info("ixnet: connected to IxNetwork %s (%s) at %s://%s, session %s (id %s)",
             build or "debug build", tp.Platform, tp.Scheme, address, session_name, sessions.Id)
    return Connection(tp, sessions, ixnetwork, str(tp.Platform), build, int(sessions.Id))


def remove_session(conn_sessions: Any, address: str, redact: Redactor) -> None:
    """Stop and delete the session (restpy: ``operations/stop?deleteAfterStop=true``)."""
    if conn_sessions is None or len(conn_sessions) == 0:
        return
    try:
        with api_call("remove session", address, redact):
            conn_sessions.remove()
    finally:
        conn_sessions._connection._session.close()  # no keep-alive socket outlives the session


# ---------------------------------------------------------------------------- ports


def vport_name(run_id: str, index: int) -> str:
    return f"vsb-{run_id}-p{index}"


def assign_ports(ixnetwork: Any, run_id: str, locations: list[PortLocation], *,
                 force_ownership: bool, link_up_timeout_s: float, poll_interval_s: float,
                 address: str, redact: Redactor, on_vports_created: Callable[[], None]) -> list[Any]:
    """Create one vport per location, connect them and wait for link up; the vports in
    generator-port order."""
    with api_call("create virtual ports", address, redact):
        vports = [ixnetwork.Vport.add(Name=vport_name(run_id, i)) for i in range(len(locations))]
    on_vports_created()
    where = ", ".join(str(loc) for loc in locations)
    with api_call(f"assign ports {where}", address, redact):
        ixnetwork.AssignPorts(
            [{"arg1": loc.chassis, "arg2": str(loc.card), "arg3": str(loc.port)} for loc in locations],
            [], [v.href for v in vports], force_ownership)
    deadline = time.monotonic() + link_up_timeout_s
    while True:
        with api_call("read port state", address, redact):
            states = [v.refresh().ConnectionState for v in vports]
        if all(s == "connectedLinkUp" for s in states):
            return [v.refresh() for v in vports]
        for loc, state in zip(locations, states):
            if state == "assignedInUseByOther":
                raise PluginError(f"ixnet: port {loc} is in use by another IxNetwork user "
                                  "(set trafficgen.ixnet.force_ownership to take it)")
        if time.monotonic() >= deadline:
            detail = ", ".join(f"{loc}: {s}" for loc, s in zip(locations, states))
            raise PluginError(f"ixnet: ports not up after {link_up_timeout_s:g} s on {address} "
                              f"({detail})")
        time.sleep(poll_interval_s)


def release_ports(ixnetwork: Any, run_id: str, address: str, redact: Redactor) -> None:
    with api_call("release ports", address, redact):
        vports = ixnetwork.Vport.find(Name=f"^vsb-{run_id}-p[0-9]+$")
        if len(vports):
            vports.ReleasePort()
