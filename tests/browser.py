"""Open an HTML file in headless Chromium and report what a reader's browser saw.

Chromium is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``: JSON
messages ending in NUL on file descriptors 3 and 4), so no extra client library and no
port are needed. It runs with ``--headless --no-sandbox --disable-gpu
--disable-background-networking`` and an empty ``--user-data-dir``, and is ended (by pid)
when done.

What is collected: console messages of level error/warning and uncaught exceptions, the
browser log's errors (a failed resource load lands there), every network request the page
made, and for every ``<img>`` whether it decoded and its natural size.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
         "--no-default-browser-check", "--disable-extensions", "--remote-debugging-pipe")


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageLoad:
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    images: list[dict] = field(default_factory=list)
    #: Every h1-h4 as the reader sees it: tag, text and the id of its enclosing section.
    headings: list[dict] = field(default_factory=list)
    title: str = ""
    #: The page's text as the reader sees it (``document.body.innerText``).
    text: str = ""


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int) -> None:
        self.write_fd, self.read_fd = write_fd, read_fd
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30.0) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        wanted = self.next_id
        deadline = time.monotonic() + timeout
        while True:
            for reply in self._read(deadline):
                if reply.get("id") == wanted:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply.get("result") or {}
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method:
                    return self.events.pop(i)
            self.events.extend(self._read(deadline))

    def _read(self, deadline: float) -> list[dict]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("chromium did not answer in time")
        ready, _, _ = select.select([self.read_fd], [], [], remaining)
        if not ready:
            raise TimeoutError("chromium did not answer in time")
        chunk = os.read(self.read_fd, 1 << 20)
        if not chunk:
            raise RuntimeError("chromium closed its DevTools pipe")
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\0")
        return [json.loads(m) for m in complete if m]


def load(path: Path, timeout: float = 60.0) -> PageLoad:
    """Open ``path`` in headless Chromium and return what happened."""
    binary = chromium()
    if binary is None:
        raise FileNotFoundError("chromium not installed (apt-get install chromium)")
    profile = tempfile.mkdtemp(prefix="vsbench-chromium-")
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    # Chromium reads commands on fd 3 and writes replies on fd 4.
    def child_fds():
        os.dup2(to_browser_r, 3)
        os.dup2(from_browser_w, 4)

    proc = subprocess.Popen([binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=child_fds, pass_fds=(3, 4))
    os.close(to_browser_r)
    os.close(from_browser_w)
    pipe = _Pipe(to_browser_w, from_browser_r)
    result = PageLoad()
    try:
        targets = pipe.send("Target.getTargets", timeout=timeout)["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = pipe.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for domain in ("Runtime", "Log", "Network", "Page"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.events.clear()
        pipe.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        pipe.wait_event("Page.loadEventFired", timeout)
        images = pipe.send("Runtime.evaluate", {
            "expression": "JSON.stringify([...document.images].map(i => ({complete: i.complete, "
                          "width: i.naturalWidth, height: i.naturalHeight, src: i.src.slice(0, 40)})))",
            "returnByValue": True, "awaitPromise": False}, session=session)
        result.images = json.loads(images["result"]["value"])
        title = pipe.send("Runtime.evaluate", {"expression": "document.title", "returnByValue": True},
                          session=session)
        result.title = title["result"]["value"]
        text = pipe.send("Runtime.evaluate", {"expression": "document.body ? document.body.innerText : ''",
                                              "returnByValue": True}, session=session)
        result.text = text["result"]["value"]
        headings = pipe.send("Runtime.evaluate", {
            "expression": "JSON.stringify([...document.querySelectorAll('h1, h2, h3, h4')].map(h => "
                          "({level: h.tagName, text: h.textContent, section: (h.closest('section') || {}).id || ''})))",
            "returnByValue": True}, session=session)
        result.headings = json.loads(headings["result"]["value"])
        for event in pipe.events:
            method, params = event.get("method"), event.get("params") or {}
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "warning", "assert"):
                result.console_errors.append(" ".join(str(a.get("value", a.get("description")))
                                                      for a in params.get("args") or []))
            elif method == "Runtime.exceptionThrown":
                result.exceptions.append(str((params.get("exceptionDetails") or {}).get("text")))
            elif method == "Log.entryAdded" and (params.get("entry") or {}).get("level") == "error":
                result.log_errors.append(str(params["entry"].get("text")))
            elif method == "Network.requestWillBeSent":
                result.requests.append(str((params.get("request") or {}).get("url"))[:80])
        try:
            pipe.send("Browser.close", timeout=10)
        except (RuntimeError, TimeoutError):
            pass
    finally:
        os.close(to_browser_w)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, by its pid
            proc.wait(timeout=15)
        os.close(from_browser_r)
        shutil.rmtree(profile, ignore_errors=True)
    return result
