"""Sign-in and roles on the pages: guards, cancel per role, the sign-in form, single-user mode."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from jobs.services.access import PAGE_TITLES
from pages.widgets.sign_in import TOKEN_KEY
from store import jobs as store_jobs
from store import runs as store_runs
from store import studies as store_studies
from store import users as store_users
from store.audit import read_audit
from tests.helpers.pages import PASSWORD, ROOT, signed_in
from tests.helpers.stores import make_two_studies, rows_of


def _queued_by(name: str, path: Path) -> str:
    return store_jobs.enqueue_job({"name": f"{name}'s knees"}, launched_by=name, path=path)


def _cancel_buttons(at: AppTest) -> list:
    return [b for b in at.button if b.key and b.key.startswith("queue_cancel_")]


def test_a_viewer_opening_launch_by_url_gets_the_guard_message_and_no_form(path):
    at = signed_in("launch", "vi", "viewer", path).run()
    assert not at.exception
    assert "not open to vi (viewer)" in at.error[0].value
    assert not at.text_input and not at.button


def test_a_viewer_sees_no_cancel_button(path):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    _queued_by("ada", path)
    at = signed_in("queue", "vi", "viewer", path).run()
    assert "not open to vi (viewer)" in at.error[0].value
    assert not _cancel_buttons(at)


def test_a_member_cancels_their_own_job_but_not_anothers(path):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    store_users.add_user("mo", "member", PASSWORD, path=path)
    other = _queued_by("ada", path)
    own = _queued_by("mo", path)
    at = signed_in("queue", "mo", "member", path).run()
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
    at = signed_in("queue", "ada", "admin", path).run()
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
    at.button[0].click().run().run()  # then the page opened again with the cookie
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
    at = signed_in("launch", "vi", "viewer", path)
    shell = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    shell.session_state[TOKEN_KEY] = at.session_state[TOKEN_KEY]
    shell.run()
    shell.switch_page("pages/launch.py").run()
    assert not shell.exception
    assert "Launch** is not open to vi (viewer)" in shell.error[0].value
    assert not shell.title and not shell.text_input  # nothing of the Launch page


# -- the admin pages and the study lifecycle, per role ------------------------------------------


@pytest.mark.parametrize("page", ["accounts", "audit"])
@pytest.mark.parametrize("role", ["viewer", "member"])
def test_a_non_admin_opening_an_admin_page_by_url_sees_only_the_refusal(path, page, role):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    at = signed_in(page, "someone", role, path).run()
    assert not at.exception
    assert [e.value for e in at.error] == [
        f"**{PAGE_TITLES[page]}** is not open to someone ({role}). Ask an admin for another "
        "role if you need it."
    ]
    assert not at.dataframe and not at.text_input and not at.button and not at.selectbox


def test_an_admin_deletes_a_study_after_typing_its_name_and_the_other_stays(path):
    _, _, _, (doomed, doomed_files), (kept, kept_files) = make_two_studies(path, path.parent)
    kept_rows = rows_of(path, kept.study_id)
    at = signed_in("queue", "ada", "admin", path).run()
    at.selectbox(key="manage_study").set_value(doomed.study_id).run()
    assert at.button(key="manage_delete").disabled
    at.text_input(key=f"manage_delete_name_{doomed.study_id}").input("doome").run()
    assert at.button(key="manage_delete").disabled  # not the exact name yet
    at.text_input(key=f"manage_delete_name_{doomed.study_id}").input("doomed").run()
    at.button(key="manage_delete").click().run()
    assert not at.exception
    assert at.success[0].value.startswith("Deleted doomed:")
    assert set(rows_of(path, doomed.study_id).values()) == {0}
    assert not any(f.exists() for f in doomed_files)
    assert rows_of(path, kept.study_id) == kept_rows
    assert all(f.exists() for f in kept_files)
    assert read_audit(action="delete", path=path).actor.tolist() == ["ada"]
    assert at.selectbox(key="manage_study").value == kept.study_id


def test_after_a_delete_the_manage_picker_names_the_study_the_form_edits(path):
    _, _, _, (doomed, _), (kept, _) = make_two_studies(path, path.parent)
    at = signed_in("queue", "ada", "admin", path).run()
    at.selectbox(key="manage_study").set_value(doomed.study_id).run()
    at.text_input(key=f"manage_delete_name_{doomed.study_id}").input("doomed").run()
    at.button(key="manage_delete").click().run()
    picker = at.selectbox(key="manage_study")
    assert not at.exception
    assert at.session_state["manage_study"] == kept.study_id  # set, not just dropped
    assert "doomed" not in " ".join(picker.options)
    assert picker.value == kept.study_id
    assert at.text_input(key=f"manage_name_{kept.study_id}").value == "kept"
    assert not [t for t in at.text_input if t.key == f"manage_name_{doomed.study_id}"]


def test_an_admin_archives_a_study_and_the_pickers_hide_it_until_asked(path):
    _, _, _, (doomed, _), (kept, _) = make_two_studies(path, path.parent)
    for study in (doomed, kept):
        store_runs.select_best_runs(study.study_id, path=path)  # results for the pickers
    at = signed_in("queue", "ada", "admin", path).run()
    at.selectbox(key="manage_study").set_value(doomed.study_id).run()
    at.button(key="manage_archive").click().run()
    assert not at.exception
    assert store_studies.get_study(doomed.study_id, path=path).archived
    picker = signed_in("explorer", "ada", "admin", path).run()
    assert not picker.exception
    toggle = picker.toggle(key="explorer_study_archived")
    assert toggle.label == "Show archived studies (1)" and not toggle.value
    assert not any("doomed" in o for o in picker.selectbox(key="explorer_study").options)
    toggle.set_value(True).run()
    assert not picker.exception
    options = picker.selectbox(key="explorer_study").options
    assert any("doomed" in o and o.endswith("· archived") for o in options)
    at.button(key="manage_archive").click().run()  # now "Bring back"
    assert not store_studies.get_study(doomed.study_id, path=path).archived


def test_a_member_renames_and_annotates_their_own_study_but_cannot_archive_or_delete(path):
    _, _, _, (doomed, _), _ = make_two_studies(path, path.parent)  # launched by alice
    at = signed_in("queue", "alice", "member", path).run()
    at.selectbox(key="manage_study").set_value(doomed.study_id).run()
    sid = doomed.study_id
    assert not [b for b in at.button if b.key in ("manage_archive", "manage_delete")]
    at.text_input(key=f"manage_name_{sid}").input("spared")
    at.text_input(key=f"manage_tags_{sid}").input("pilot, knees")
    at.text_area(key=f"manage_notes_{sid}").input("**beta** wins")
    at.button(key="manage_save").click().run()
    assert not at.exception
    study = store_studies.get_study(sid, path=path)
    assert (study.name, study.tags, study.notes) == ("spared", ("pilot", "knees"), "**beta** wins")
    assert set(read_audit(actor="alice", path=path).action) >= {"rename", "tags", "notes"}


def test_a_member_cannot_edit_another_persons_study(path):
    _, _, _, (doomed, _), _ = make_two_studies(path, path.parent)  # launched by alice
    at = signed_in("queue", "mo", "member", path).run()
    at.selectbox(key="manage_study").set_value(doomed.study_id).run()
    assert at.text_input(key=f"manage_name_{doomed.study_id}").disabled
    assert at.button(key="manage_save").disabled
    assert any("only they or an admin may rename" in c.value for c in at.caption)


def test_with_an_identity_provider_configured_sign_in_offers_the_lab_account_too(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    at.secrets["auth"] = {"redirect_uri": "http://localhost:8501/oauth2callback", "lab": {}}
    at.run()
    assert not at.exception
    assert at.button(key="oidc_sign_in").label == "Sign in with your lab account"
    assert at.text_input(key="sign_in_name")  # the local form stays beside it


def test_without_an_identity_provider_only_the_local_form_shows(path):
    store_users.add_user("mo", "member", PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    assert not [b for b in at.button if b.key == "oidc_sign_in"]


def test_through_the_app_a_viewer_lands_on_compare_methods(path):
    at = signed_in("compare", "vi", "viewer", path)
    shell = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30)
    shell.session_state[TOKEN_KEY] = at.session_state[TOKEN_KEY]
    shell.run()
    assert not shell.exception
    assert shell.title[0].value == "Compare methods"


def _signed_in_through_the_app(name: str, role: str, path: Path) -> AppTest:
    """app.py, signed in through its form as ``name`` (added with ``role``), with an admin
    account beside it (with no enabled account left, loopback is single-user mode)."""
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    store_users.add_user(name, role, PASSWORD, path=path)
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=30).run()
    at.text_input(key="sign_in_name").input(name)
    at.text_input(key="sign_in_password").input(PASSWORD)
    at.button[0].click().run().run()  # then the page opened again with the cookie
    assert any(f"Signed in as **{name}**" in m.value for m in at.sidebar.markdown)
    return at


def test_a_disabled_persons_next_click_says_the_account_was_disabled(path):
    at = _signed_in_through_the_app("mo", "member", path)
    store_users.set_disabled("mo", True, by="ada", path=path)
    at.run()  # their next click
    assert at.title[0].value == "Sign in to SoftGrade"
    warnings = [w.value for w in at.warning]
    assert any("account was disabled by an admin" in w for w in warnings), warnings
    assert not at.exception


def test_a_removed_persons_next_click_says_the_account_was_removed(path):
    at = _signed_in_through_the_app("mo", "member", path)
    store_users.remove_user("mo", by="ada", path=path)
    at.run()
    assert any("account was removed by an admin" in w.value for w in at.warning)


def test_signing_out_on_purpose_shows_the_form_without_a_reason(path):
    at = _signed_in_through_the_app("mo", "member", path)
    at.sidebar.button(key="sign_out").click().run()
    at.run()
    assert at.title[0].value == "Sign in to SoftGrade"
    assert not [w.value for w in at.warning]


def _cancelled_by(name: str, path: Path) -> str:
    job_id = _queued_by(name, path)
    store_jobs.request_cancel(job_id, by=name, path=path)
    return job_id


def test_a_member_resumes_their_own_cancelled_job_but_not_anothers(path):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    store_users.add_user("mo", "member", PASSWORD, path=path)
    other, own = _cancelled_by("ada", path), _cancelled_by("mo", path)
    at = signed_in("queue", "mo", "member", path).run()
    assert not at.exception
    assert at.button(key=f"queue_resume_{other}").disabled
    at.button(key=f"queue_resume_{own}").click().run()
    assert store_jobs.get_job(own, path=path).status == "queued"
    assert store_jobs.get_job(other, path=path).status == "cancelled"
    assert any("queued again" in i.value for i in at.info)
    assert read_audit(action="resume", path=path).actor.tolist() == ["mo"]


def test_a_viewer_sees_no_resume_button(path):
    store_users.add_user("ada", "admin", PASSWORD, path=path)
    _cancelled_by("ada", path)
    store_users.add_user("vi", "viewer", PASSWORD, path=path)
    at = signed_in("queue", "vi", "viewer", path).run()
    assert not [b for b in at.button if b.key and b.key.startswith("queue_resume_")]
