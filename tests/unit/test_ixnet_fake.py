"""The fake IxNetwork API server answers the wire protocol the way restpy relies on.

These talk raw HTTP to the fake process, so they pin the protocol facts the plugin tests
depend on: the platform probe and its Server header, API-key authentication, 201 with
links, 202 then poll, select, strict attributes and the statistics snapshot files.
"""

import time

import pytest
import requests

from tests.fakes.ixnet.launcher import FakeIxNetwork

KEY = "feedfacecafebeef"


@pytest.fixture
def fake(tmp_path):
    fake = FakeIxNetwork.start(tmp_path, "--password-env", "FAKE_PW", "--api-key-env", "FAKE_KEY",
                               "--session-start-s", "0.3", env={"FAKE_PW": "pw", "FAKE_KEY": KEY})
    yield fake
    fake.stop()


def url(fake, path):
    return f"http://{fake.host}:{fake.port}{path}"


def api(fake, method, path, body=None, key=KEY):
    return requests.request(method, url(fake, path), json=body, timeout=5,
                            headers={"X-Api-Key": key} if key else {})


def active_session(fake):
    created = api(fake, "POST", "/api/v1/sessions", {"applicationType": "ixnrest"})
    href = created.json()["links"][0]["href"]
    api(fake, "POST", f"{href}/operations/start", {"applicationType": "ixnrest"})
    time.sleep(0.35)
    return href


def test_platform_probe_and_login(fake):
    probe = requests.post(url(fake, "/api/v1/auth/session"), json={"username": "", "password": ""}, timeout=5)
    assert probe.status_code == 401 and probe.headers["Server"] == "nginx"  # restpy: linux
    bad = requests.post(url(fake, "/api/v1/auth/session"), json={"username": "admin", "password": "x"}, timeout=5)
    assert bad.status_code == 401 and bad.json()["errors"][0]["detail"]
    good = requests.post(url(fake, "/api/v1/auth/session"), json={"username": "admin", "password": "pw"}, timeout=5)
    assert good.status_code == 200 and good.json()["apiKey"] == KEY


def test_every_api_request_needs_the_key(fake):
    assert api(fake, "GET", "/api/v1/sessions", key=None).status_code == 401
    assert api(fake, "GET", "/api/v1/sessions", key="nope").status_code == 401
    assert api(fake, "GET", "/api/v1/sessions").json() == []


def test_sessions_start_asynchronously_and_are_deleted_by_stop(fake):
    created = api(fake, "POST", "/api/v1/sessions", {"applicationType": "ixnrest"})
    assert created.status_code == 201
    href = created.json()["links"][0]["href"]
    assert api(fake, "GET", href).json()["state"] == "INITIAL"
    started = api(fake, "POST", f"{href}/operations/start", {"applicationType": "ixnrest"})
    assert started.status_code == 202 and started.json()["state"] == "IN_PROGRESS"
    assert api(fake, "GET", f"{href}/ixnetwork").status_code == 400  # not ACTIVE yet
    time.sleep(0.35)
    assert api(fake, "GET", started.json()["url"]).json()["state"] == "SUCCESS"
    assert api(fake, "GET", href).json()["state"] == "ACTIVE"
    assert api(fake, "GET", f"{href}/ixnetwork/globals").json()["buildNumber"] == "9.30.2212.7"
    stopped = api(fake, "POST", f"{href}/operations/stop?deleteAfterStop=true")
    assert stopped.json()["state"] == "SUCCESS"
    assert api(fake, "GET", "/api/v1/sessions").json() == []


def test_tree_crud_select_and_strict_attributes(fake):
    href = active_session(fake)
    ixn = f"{href}/ixnetwork"
    vport = api(fake, "POST", f"{ixn}/vport", {"name": "a"})
    assert vport.status_code == 201
    vhref = vport.json()["links"][0]["href"]
    assert api(fake, "PATCH", vhref, {"name": "b"}).status_code == 200
    assert api(fake, "PATCH", f"{ixn}/vport", {"id": "1", "name": "c"}).status_code == 200
    bad = api(fake, "PATCH", vhref, {"nmae": "d"})
    assert bad.status_code == 400 and "nmae" in bad.json()["errors"][0]["detail"]
    select = api(fake, "POST", f"{ixn}/operations/select?xpath=false", {"selects": [{
        "from": ixn, "properties": [], "inlines": [],
        "children": [{"child": "vport", "properties": ["*"],
                      "filters": [{"property": "name", "regex": "^c$"}]}]}]})
    assert [v["name"] for v in select.json()[0]["vport"]] == ["c"]
    assert api(fake, "DELETE", vhref).status_code == 200
    assert api(fake, "GET", vhref).status_code == 404


def test_operation_errors_are_reported_as_error_state(fake):
    href = active_session(fake)
    applied = api(fake, "POST", f"{href}/ixnetwork/traffic/operations/apply",
                  {"arg1": f"{href}/ixnetwork/traffic"})
    assert applied.status_code == 202
    assert applied.json()["state"] == "ERROR" and "no traffic" in applied.json()["message"]
    unknown = api(fake, "POST", f"{href}/ixnetwork/operations/frobnicate", {})
    assert unknown.status_code == 404
