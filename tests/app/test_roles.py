"""Sign-in and roles on the pages: guards, cancel per role, the sign-in form, single-user mode."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from pages._ui import TOKEN_KEY
from store import jobs as store_jobs
from store import users as store_users
from store.db import StoreError

ROOT = Path(__file__).parents[2]
PASSWORD = "correct horse battery"


def _signed_in(page: str, name: str, role: str, path: Path) -> AppTest:
    """The page as ``name`` (added with ``role`` if new), signed in through the store."""
    try:
        store_users.get_user(name, path=path)
    except StoreError:  # not there yet
        store_users.add_user(name, role, PASSWORD, path=path)
    _, token = store_users.sign_in(name, PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=30)
    at.session_state[TOKEN_KEY] = token
    return at


def _queued_by(name: str, path: Path) -> str:
    return store_jobs.enqueue_job({"name": f"{name}'s knees"}, launched_by=name, path=path)


def _cancel_buttons(at: AppTest) -> list:
    return [b for b in at.button if b.key and b.key.startswith("queue_cancel_")]


def test_a_viewer_opening_launch_by_url_gets_the_guard_message_and_no_form(path):
    at = _signed_in("launch", "vi", "viewer", path).run()
    assert not at.exception
    assert "not open to vi (viewer)" in at.error[0].value
    assert not at.text_input and not at.button


def test_a_viewer_sees_no_cancel_button(path):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    _queued_by("ada", path)
    at = _signed_in("queue", "vi", "viewer", path).run()
    assert "not open to vi (viewer)" in at.error[0].value
    assert not _cancel_buttons(at)


def test_a_member_cancels_their_own_job_but_not_anothers(path):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    store_users.add_user("mo", "member", PASSWORD, path=path)
    other = _queued_by("ada", path)
    own = _queued_by("mo", path)
    at = _signed_in("queue", "mo", "member", path).run()
    assert not at.exception
    buttons = {b.key: b for b in _cancel_buttons(at)}
    assert buttons[f"queue_cancel_{other}"].disabled
    assert not buttons[f"queue_cancel_{own}"].disabled
    buttons[f"queue_cancel_{own}"].click().run()
    assert store_jobs.get_job(own, path=path).status == "cancelled"
    assert store_jobs.get_job(other, path=path).status == "queued"


def test_an_admin_cancels_anyones_job(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    job = _queued_by("mo", path)
    at = _signed_in("queue", "ada", "admin", path).run()
    button = next(b for b in _cancel_buttons(at) if b.key == f"queue_cancel_{job}")
    assert not button.disabled
    button.click().run()
    assert store_jobs.get_job(job, path=path).status == "cancelled"


def test_a_wrong_password_gives_one_message_and_no_pages(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    assert not at.exception
    at.text_input(key="sign_in_name").input("mo")
    at.text_input(key="sign_in_password").input("not the password")
    at.button[0].click().run()
    assert [e.value for e in at.error] == [
        "Could not sign in: wrong name or password, or the account is disabled."
    ]
    assert TOKEN_KEY not in at.session_state


def test_a_right_password_signs_in_and_shows_name_role_and_sign_out(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    at.text_input(key="sign_in_name").input("mo")
    at.text_input(key="sign_in_password").input(PASSWORD)
    at.button[0].click().run()
    assert not at.exception
    assert store_users.validate_session(at.session_state[TOKEN_KEY], path=path).name == "mo"
    assert any("Signed in as **mo** (member)" in m.value for m in at.sidebar.markdown)


def test_an_unknown_token_goes_back_to_sign_in(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "pages" / "compare.py"), default_timeout=30)
    at.session_state[TOKEN_KEY] = "no-such-token"
    at.run()
    assert "Sign in to open this page." in at.warning[0].value


def test_single_user_mode_needs_no_sign_in(path):
    at = AppTest.from_file(str(ROOT / "pages" / "launch.py"), default_timeout=30).run()
    assert not at.exception
    assert not [e for e in at.error if "not open to" in e.value]
    assert at.text_input(key="launch_name")


def test_through_the_app_a_viewer_opening_launch_gets_its_guard_not_the_default_page(path):
    """app.py keeps the pages a role lacks as hidden entries, so their URL runs the page's
    guard rather than Streamlit's "Page not found" over the viewer's first page."""
    at = _signed_in("launch", "vi", "viewer", path)
    shell = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    shell.session_state[TOKEN_KEY] = at.session_state[TOKEN_KEY]
    shell.run()
    shell.switch_page("pages/launch.py").run()
    assert not shell.exception
    assert "Launch** is not open to vi (viewer)" in shell.error[0].value
    assert not shell.title and not shell.text_input  # nothing of the Launch page
