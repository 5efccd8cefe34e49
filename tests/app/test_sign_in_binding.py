"""Sign-in in the app (issue 31): a sign-in belongs to the connection that made it, the
browser's address comes from the proxy only behind `up --behind-proxy`, and a browser keeps a
known-client token that strangers' failures cannot lock out."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from jobs.services import access
from pages.widgets import sign_in
from pages.widgets.sign_in import KNOWN_CLIENT_TO_WRITE_KEY, TOKEN_KEY
from store import sign_in as store_sign_in
from store import users as store_users
from store.audit import read_audit
from tests.helpers.pages import PASSWORD, ROOT


def _sign_in_through_the_form(name: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    at.text_input(key="sign_in_name").input(name)
    at.text_input(key="sign_in_password").input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    return at.run()  # the page opened again once the browser holds the cookie


def _signed_in_as(at: AppTest) -> list[str]:
    return [m.value for m in at.sidebar.markdown if "Signed in as" in m.value]


class Connection:
    """A stand-in for Streamlit's websocket client: only its identity matters."""


def test_signed_in_is_said_only_once_the_cookie_is_written(path, monkeypatch):
    """Issue 39: "Signed in as" showed 0.3-0.4 s before the cookie existed, and an address
    opened in that gap found none. The sign-in run now shows only "Signing in…" and the
    script that writes the cookie, then reloads once the browser holds it; the reload (a new
    connection presenting the cookie) is signed in."""
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    mine = Connection()
    monkeypatch.setattr(sign_in, "current_connection", lambda: mine)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    at.text_input(key="sign_in_name").input("ada")
    at.text_input(key="sign_in_password").input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    assert not _signed_in_as(at) and not at.sidebar.button  # no sign-out, no menu yet
    assert sign_in.SIGNING_IN in [m.value for m in at.markdown][0]
    token = at.session_state[TOKEN_KEY]
    scripts = [str(h.proto.body) for h in at.get("html")]
    written = f"document.cookie = 'softgrade_session={token};"
    assert any(written in s and "location.reload()" in s for s in scripts), scripts
    assert any(s.index(written) < s.index("location.reload()") for s in scripts if written in s)
    # The reload: another connection, presenting the cookie the script wrote.
    monkeypatch.setattr(sign_in, "current_connection", Connection)
    monkeypatch.setattr(sign_in, "_cookie_token", lambda: token)
    at.run()
    assert _signed_in_as(at)
    assert not any("location.reload()" in str(h.proto.body) for h in at.get("html"))


def test_another_connection_presenting_the_session_gets_the_sign_in_form(path, monkeypatch):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    mine = Connection()
    monkeypatch.setattr(sign_in, "current_connection", lambda: mine)
    at = _sign_in_through_the_form("ada")
    assert _signed_in_as(at)
    token = at.session_state[TOKEN_KEY]

    # Another client reconnects to this Streamlit session by its id, without the cookie.
    thief = Connection()
    monkeypatch.setattr(sign_in, "current_connection", lambda: thief)
    at.run()
    assert not at.exception
    assert not _signed_in_as(at)
    assert at.text_input(key="sign_in_password")
    # The session itself is not ended: the browser that signed in keeps it through its cookie.
    assert store_users.validate_session(token, path=path).name == "ada"


def test_the_connection_that_signed_in_stays_signed_in(path, monkeypatch):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    mine = Connection()
    monkeypatch.setattr(sign_in, "current_connection", lambda: mine)
    at = _sign_in_through_the_form("ada")
    at.run()
    assert _signed_in_as(at)


def test_a_reconnect_that_presents_the_session_cookie_stays_signed_in(path, monkeypatch):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    mine = Connection()
    monkeypatch.setattr(sign_in, "current_connection", lambda: mine)
    at = _sign_in_through_the_form("ada")
    token = at.session_state[TOKEN_KEY]
    monkeypatch.setattr(sign_in, "current_connection", Connection)  # a new one: a reconnect
    monkeypatch.setattr(sign_in, "_cookie_token", lambda: token)  # the cookie sign-in wrote
    at.run()
    assert _signed_in_as(at)


def test_sign_in_gives_the_browser_a_known_client_token_that_passes_a_lockout(path, monkeypatch):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    issued: list[str] = []
    real = store_sign_in.known_client_token

    def spy(name: str, **kw: object) -> str | None:
        issued.append(real(name, **kw))  # type: ignore[arg-type]
        return issued[-1]

    monkeypatch.setattr(store_sign_in, "known_client_token", spy)
    at = _sign_in_through_the_form("ada")
    assert len(issued) == 1 and issued[0]
    assert KNOWN_CLIENT_TO_WRITE_KEY not in at.session_state  # handed to the cookie script
    for _ in range(store_sign_in.SIGN_IN_LIMITS.per_account):
        with pytest.raises(store_users.SignInError):
            store_sign_in.sign_in("ada", "wrong password", client="10.6.6.6", path=path)
    # The browser shows it at its next sign-in (its cookie): the lockout does not apply.
    monkeypatch.setattr(sign_in, "_cookie", lambda name: issued[0])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    at.text_input(key="sign_in_name").input("ada")
    at.text_input(key="sign_in_password").input(PASSWORD)
    at.button[0].click().run().run()
    assert _signed_in_as(at)


def _sign_in_from(monkeypatch, path, name: str, details: tuple, password: str = PASSWORD):
    monkeypatch.setattr(sign_in, "connection_details", lambda: details)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    at.text_input(key="sign_in_name").input(name)
    at.text_input(key="sign_in_password").input(password)
    at.button[0].click().run()
    assert not at.exception
    return at


def test_behind_the_proxy_the_address_is_the_forwarded_one_and_is_logged(path, monkeypatch):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    monkeypatch.setenv(access.SERVED_HOST_ENV, access.BEHIND_PROXY)
    # The browser wrote 6.6.6.6 itself; nginx appended the address it saw.
    _sign_in_from(monkeypatch, path, "ada", (None, ["6.6.6.6, 203.0.113.9"], None))
    assert read_audit(action="sign_in", path=path).detail.tolist() == ["from 203.0.113.9"]


def test_served_directly_forwarded_headers_are_ignored_and_loopback_has_an_address(
    path, monkeypatch
):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    _sign_in_from(monkeypatch, path, "ada", (None, ["203.0.113.9"], "203.0.113.9"))
    assert read_audit(action="sign_in", path=path).detail.tolist() == ["from 127.0.0.1"]


def test_behind_the_proxy_one_address_guessing_is_slowed(path, monkeypatch):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    monkeypatch.setenv(access.SERVED_HOST_ENV, access.BEHIND_PROXY)
    limits = store_sign_in.SignInLimits(per_client=3)
    monkeypatch.setattr(store_sign_in, "SIGN_IN_LIMITS", limits)
    monkeypatch.setattr(
        store_sign_in.sign_in,
        "__kwdefaults__",
        {**store_sign_in.sign_in.__kwdefaults__, "limits": limits},
    )
    guesser = (None, ["203.0.113.9"], None)
    for name in ("root", "admin", "bob"):
        _sign_in_from(monkeypatch, path, name, guesser, password="guess")
    at = _sign_in_from(monkeypatch, path, "ada", guesser)
    assert "from this address" in at.error[0].value
    at = _sign_in_from(monkeypatch, path, "ada", (None, ["198.51.100.4"], None))
    # Another address is not slowed: the right password signs in (the page says "Signing
    # in…" until the cookie is written, then reloads signed in).
    assert not at.error and sign_in.SIGNING_IN in [m.value for m in at.markdown][0]
    assert "from 198.51.100.4" in read_audit(action="sign_in", path=path).detail.tolist()


@pytest.mark.parametrize(
    ("peer", "forwarded", "real_ip", "behind", "hops", "expected"),
    [
        (None, [], None, False, 1, "127.0.0.1"),  # loopback: Streamlit says None
        ("192.0.2.7", ["203.0.113.9"], None, False, 1, "192.0.2.7"),  # headers not trusted
        (None, ["6.6.6.6, 203.0.113.9"], None, True, 1, "203.0.113.9"),  # right-most
        (None, ["6.6.6.6", "203.0.113.9"], None, True, 1, "203.0.113.9"),  # two headers
        (None, ["6.6.6.6, 203.0.113.9, 10.0.0.1"], None, True, 2, "203.0.113.9"),  # two proxies
        (None, [], "203.0.113.9", True, 1, "203.0.113.9"),  # X-Real-IP only
        (None, ["not an address"], None, True, 1, "127.0.0.1"),  # nonsense: the connection's
        (None, ["[2001:db8::1]"], None, True, 1, "2001:db8::1"),
    ],
)
def test_client_address_takes_the_proxys_entry_only_behind_the_proxy(
    peer, forwarded, real_ip, behind, hops, expected
):
    assert (
        access.client_address(peer, forwarded, real_ip, behind_proxy=behind, hops=hops) == expected
    )
