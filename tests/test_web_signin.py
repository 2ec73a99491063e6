"""Sign-in that resists guessing: limits per name and per address (429), equal work for known
and unknown names, server-side sign-out, capped form fields, no-store on signed-in pages."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient
from typer.testing import CliRunner

from service.cli.main import app as cli_app
from service.config import WebSettings
from service.web.app import create_app
from service.web.auth import check_credentials, hash_password, user_rounds
from tests.loop_rows import Rows
from tests.web_client import (  # noqa: F401 - alice_hash is a fixture
    PASSWORD, TEAM_TOKEN, alice_hash, csrf_of, make_settings, sign_in,
)


def _client(store, alice_hash, **web) -> TestClient:
    return TestClient(create_app(make_settings(alice_hash, **web), store), follow_redirects=False)


def test_wrong_passwords_lock_the_name_even_for_the_right_password(lite, alice_hash):
    with _client(lite, alice_hash, login_failures_per_name=5) as c:
        assert [sign_in(c, password=f"guess{i}").status_code for i in range(5)] == [401] * 5
        late = sign_in(c)  # the right one, after the limit: refused without a check
        assert late.status_code == 429 and int(late.headers["retry-after"]) > 0
        assert "too many failed sign-ins" in late.text and "alice" not in c.cookies.get("benchwatch_session", "")
        assert sign_in(c, name="ALICE", password="x").status_code == 429  # one target, any case
        assert sign_in(c, name="bob", password=TEAM_TOKEN).status_code == 303  # other names go on


def test_team_token_guesses_and_one_address_are_limited(lite, alice_hash):
    with _client(lite, alice_hash, login_failures_per_name=50, login_failures_per_address=4) as c:
        codes = [sign_in(c, name=f"user{i}", password="not-the-token").status_code for i in range(4)]
        assert codes == [401] * 4
        assert sign_in(c, name="carol", password=TEAM_TOKEN).status_code == 429
        assert sign_in(c).status_code == 429  # this address is out of attempts, whatever the name


def test_unknown_and_known_names_cost_the_same():
    web = WebSettings(users={"alice": hash_password(PASSWORD, rounds=10)})
    assert user_rounds(web) == 10 and user_rounds(WebSettings()) == 12

    def cost(name: str) -> float:
        """The least of a few tries: other work on the box only ever adds time."""
        times = []
        for _ in range(5):
            t = time.perf_counter()
            assert not check_credentials(web, name, "wrong password").ok
            times.append(time.perf_counter() - t)
        return min(times)

    cost("nobody")  # the dummy hash is made once per cost
    known, unknown = cost("alice"), cost("nobody")
    # equal work; before, an unknown name cost 2**(10-4) = 64 times less
    assert 1 / 3 < unknown / known < 3, (known, unknown)


def test_sign_out_revokes_a_saved_cookie(store, alice_hash):
    rows = Rows(store)
    aid = rows.alert("h100", "rms_norm", 30)
    with _client(store, alice_hash) as c:
        assert sign_in(c).status_code == 303
        token = csrf_of(c.get(f"/alerts/{aid}").text)
        saved = c.cookies.get("benchwatch_session")
        assert c.post("/logout", data={"csrf_token": token}).status_code == 303
    with _client(store, alice_hash) as replay:
        replay.cookies.set("benchwatch_session", saved)
        r = replay.post(f"/alerts/{aid}/ack", data={"csrf_token": token})
        assert r.status_code == 401
        assert "Sign in</a> to acknowledge" in replay.get(f"/alerts/{aid}").text


def test_big_fields_are_refused_and_never_echoed_into_the_cookie(lite, alice_hash):
    aid = Rows(lite).alert("h100", "rms_norm", 30)
    with _client(lite, alice_hash) as c:
        sign_in(c)
        token = csrf_of(c.get(f"/alerts/{aid}").text)
        huge = c.post(f"/alerts/{aid}/reclassify", data={"csrf_token": token, "cause": "x" * 1_000_000})
        assert huge.status_code == 413 and "set-cookie" not in huge.headers
        big = c.post(f"/alerts/{aid}/reclassify", data={"csrf_token": token, "cause": "x" * 5000})
        assert big.status_code == 400 and len(big.headers.get("set-cookie", "")) < 4096
        odd = c.post(f"/alerts/{aid}/reclassify", data={"csrf_token": token, "cause": "gremlins" * 3})
        assert odd.status_code == 303 and len(odd.headers.get("set-cookie", "")) < 4096
        long_name = sign_in(c, name="n" * 10_000)
        assert long_name.status_code == 400 and len(long_name.headers.get("set-cookie", "")) < 4096


def test_signed_in_pages_are_not_stored_by_any_cache(lite, alice_hash):
    aid = Rows(lite).alert("h100", "rms_norm", 30)
    with _client(lite, alice_hash) as c:
        assert "no-store" not in c.get(f"/alerts/{aid}").headers.get("cache-control", "")
        assert c.get("/login").headers["cache-control"] == "no-store"
        sign_in(c)
        for path in ("/", f"/alerts/{aid}", "/status"):
            assert c.get(path).headers["cache-control"] == "no-store", path


def test_web_users_that_are_not_json_is_a_one_line_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCHWATCH_DATABASE_URL", f"sqlite:///{tmp_path / 'bw.db'}")
    monkeypatch.setenv("BENCHWATCH_WEB_USERS", "{alice: $2b$12$notjson")
    res = CliRunner().invoke(cli_app, ["status"])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and lines[0].startswith("benchwatch: error: config:")
    assert "$2b$" not in lines[0]
