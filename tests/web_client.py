"""The web tests' client (a helper module: it holds no tests): credentials, the app's settings,
a TestClient over the 50-night web test world, and the sign-in form steps."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

from service.config import Settings, WebSettings
from service.web.app import create_app
from service.web.auth import hash_password
from tests.web_world import build_world

PASSWORD = "correct horse battery"
TEAM_TOKEN = "team-token-5f1c2e9a"
SECRET_KEY = "session-key-0b7d3c1e9f"


@pytest.fixture(scope="module")
def alice_hash() -> str:
    return hash_password(PASSWORD, rounds=4)


def make_settings(alice_hash: str, **web) -> Settings:
    return Settings(web=WebSettings(secret_key=SECRET_KEY, team_token=TEAM_TOKEN,
                                    users={"alice": alice_hash}, **web))


@pytest.fixture
def world(store):
    return build_world(store, nights=50)


@pytest.fixture
def client(store, world, alice_hash):
    with TestClient(create_app(make_settings(alice_hash), store), follow_redirects=False) as c:
        yield c


def csrf_of(html: str) -> str:
    """The CSRF token a page's form carries (fails the test when the page has no form)."""
    m = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert m, "form without a CSRF token"
    return m.group(1)


def sign_in(client: TestClient, name: str = "alice", password: str = PASSWORD, next_: str = "/"):
    """Sign in through the form, as a browser does (its CSRF token first)."""
    token = csrf_of(client.get("/login").text)
    return client.post("/login", data={"name": name, "password": password, "csrf_token": token, "next": next_})
