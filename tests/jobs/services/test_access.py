"""Roles, pages and actions; loopback; confining import paths to the data roots."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jobs.services import access
from jobs.services.access import AccessDenied, Action, PathRefused, confine_import_path, data_roots
from store.users import Account, Role

VIEWER = Account("vera", Role.VIEWER)
MEMBER = Account("mo", Role.MEMBER)
ADMIN = Account("ada", Role.ADMIN)


def test_each_role_sees_its_pages_and_each_higher_role_sees_more():
    viewer = ("data", "compare", "explorer", "relationship", "attention", "demo")
    assert access.pages_for(VIEWER) == viewer
    assert set(access.pages_for(MEMBER)) - set(access.pages_for(VIEWER)) == {
        "launch",
        "queue",
        "review",
        "second_reader",
    }
    assert set(access.pages_for(ADMIN)) - set(access.pages_for(MEMBER)) == {"accounts", "audit"}


def test_viewer_may_read_and_grade_but_not_launch_import_or_cancel():
    assert access.can(VIEWER, "view_results") and access.can(VIEWER, Action.GRADE_FILM)
    for action in (Action.LAUNCH, Action.IMPORT, Action.CANCEL_OWN, Action.DELETE):
        assert not access.can(VIEWER, action, owner="vera")
    with pytest.raises(AccessDenied, match="vera \\(viewer\\) may not launch studies.*member"):
        access.require(VIEWER, Action.LAUNCH)


def test_member_cancels_and_edits_only_what_they_launched():
    assert access.can(MEMBER, Action.CANCEL_OWN, owner="mo")
    assert not access.can(MEMBER, Action.CANCEL_OWN, owner="ada")
    assert not access.can(MEMBER, Action.CANCEL_OWN, owner=None)
    assert access.can(MEMBER, Action.EDIT_OWN_STUDY, owner="mo")
    with pytest.raises(AccessDenied, match="only what they launched.*launched by ada"):
        access.require(MEMBER, Action.CANCEL_OWN, owner="ada")
    assert not access.can(MEMBER, Action.ARCHIVE)


def test_admin_may_do_everything_to_anyones_studies():
    assert all(access.can(ADMIN, a, owner="someone") for a in Action)
    assert access.LOCAL_ACCOUNT.role is Role.ADMIN


@pytest.mark.parametrize(
    ("host", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.5", False),
        ("lab-server.example.org", False),
    ],
)
def test_loopback_is_only_this_machine(host, loopback):
    assert access.is_loopback(host) is loopback


def test_serving_beyond_loopback_needs_accounts():
    assert access.refuse_unprotected_host("127.0.0.1", has_accounts=False) is None
    assert access.refuse_unprotected_host("0.0.0.0", has_accounts=True) is None
    message = access.refuse_unprotected_host("0.0.0.0", has_accounts=False)
    assert "python -m jobs users add NAME --role admin" in message
    proxied = access.refuse_unprotected_host(access.BEHIND_PROXY, has_accounts=False)
    assert proxied.startswith("refusing to serve behind a reverse proxy")
    assert access.served_beyond_loopback({"SOFTGRADE_SERVED_HOST": access.BEHIND_PROXY})
    assert access.single_user_mode(has_accounts=False, env={})
    assert not access.single_user_mode(has_accounts=True, env={})
    assert not access.single_user_mode(has_accounts=False, env={"SOFTGRADE_SERVED_HOST": "::"})


def test_data_roots_default_anywhere_on_loopback_and_home_beyond(tmp_path):
    assert data_roots({}) is None
    assert data_roots({"SOFTGRADE_SERVED_HOST": "127.0.0.1"}) is None
    beyond = {"SOFTGRADE_SERVED_HOST": "0.0.0.0", "SOFTGRADE_HOME": str(tmp_path)}
    assert data_roots(beyond) == [tmp_path.resolve()]
    a, b = tmp_path / "a", tmp_path / "b"
    set_roots = {**beyond, "SOFTGRADE_DATA_ROOTS": f"{a}{os.pathsep}{b}{os.pathsep}"}
    assert data_roots(set_roots) == [a.resolve(), b.resolve()]
    assert data_roots({"SOFTGRADE_DATA_ROOTS": str(a)}) == [a.resolve()]


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """A data root with films, a secret folder beside it, and links in and out."""
    root = tmp_path / "films"
    (root / "study1").mkdir(parents=True)
    (root / "study2").mkdir()
    secret = tmp_path / "secret"
    secret.mkdir()
    (root / "out").symlink_to(secret)
    (root / "shortcut").symlink_to(root / "study2")
    return {"root": root, "secret": secret}


def test_paths_inside_a_root_are_allowed_and_resolved(tree):
    root = tree["root"]
    assert confine_import_path(root / "study1", [root]) == (root / "study1").resolve()
    assert (
        confine_import_path(root / "study1" / ".." / "study2", [root])
        == (root / "study2").resolve()
    )
    assert confine_import_path(root / "shortcut", [root]) == (root / "study2").resolve()
    assert confine_import_path("study1", [root]) == (root / "study1").resolve()


def test_dotdot_out_of_a_root_is_refused(tree):
    root = tree["root"]
    with pytest.raises(PathRefused, match=r"outside the folders.*'\.\.' leads to .*secret"):
        confine_import_path(f"{root}/../secret", [root])
    with pytest.raises(PathRefused, match=r"'\.\.' leads to"):
        confine_import_path("../secret", [root])


def test_link_out_of_a_root_is_refused(tree):
    root = tree["root"]
    with pytest.raises(PathRefused, match="leads through a link to .*secret"):
        confine_import_path(root / "out", [root])
    with pytest.raises(PathRefused, match="leads through a link"):
        confine_import_path(root / "out" / "deeper", [root])


def test_other_paths_are_refused_naming_the_roots(tree):
    root = tree["root"]
    with pytest.raises(PathRefused, match=f"{tree['secret']} is outside .*{root}.*DATA_ROOTS"):
        confine_import_path(tree["secret"], [root])
    with pytest.raises(PathRefused, match="no path given"):
        confine_import_path("  ", [root])
    with pytest.raises(PathRefused, match="switched off"):
        confine_import_path(root, [])


def test_without_roots_any_path_is_allowed(tree):
    assert confine_import_path(tree["root"] / "out", None) == tree["secret"].resolve()


# -- OIDC: e-mail -> role --------------------------------------------------------------------


def test_oidc_roles_come_from_secrets_and_the_roles_file_which_wins(tmp_path):
    file = tmp_path / "roles.txt"
    file.write_text("# lab roles\nPI@Lab.org admin\n@lab.org  viewer  # everyone else\n")
    roles = access.oidc_roles(
        {"roles": {"pi@lab.org": "member", "tech@clinic.org": "member"}},
        env={access.OIDC_ROLES_ENV: str(file)},
    )
    assert roles == {
        "pi@lab.org": Role.ADMIN,
        "tech@clinic.org": Role.MEMBER,
        "@lab.org": Role.VIEWER,
    }


@pytest.mark.parametrize(
    ("email", "role"),
    [
        ("pi@lab.org", Role.ADMIN),
        ("PI@LAB.ORG", Role.ADMIN),  # case does not matter
        ("student@lab.org", Role.VIEWER),  # the domain's entry
        ("tech@clinic.org", Role.MEMBER),
        ("stranger@else.com", None),  # unknown: no access
        ("", None),
    ],
)
def test_oidc_account_maps_an_email_to_its_role_or_to_no_access(email, role):
    roles = {"pi@lab.org": Role.ADMIN, "@lab.org": Role.VIEWER, "tech@clinic.org": Role.MEMBER}
    account = access.oidc_account(email, roles)
    assert (account.role if account else None) == role
    if account:
        assert account.name == email.lower()


def test_bad_oidc_role_mappings_are_refused_with_every_problem_named(tmp_path):
    with pytest.raises(ValueError, match=r"'x@lab.org' has role 'boss'.*'nobody' is not an e-mail"):
        access.oidc_roles({"roles": {"x@lab.org": "boss", "nobody": "viewer"}}, env={})
    file = tmp_path / "roles.txt"
    file.write_text("a@lab.org\nb@lab.org member extra\n")
    with pytest.raises(ValueError, match="line 1 is not 'e-mail role'; line 2 is not"):
        access.oidc_roles({}, env={access.OIDC_ROLES_ENV: str(file)})
    with pytest.raises(ValueError, match="cannot read SOFTGRADE_OIDC_ROLES file"):
        access.oidc_roles({}, env={access.OIDC_ROLES_ENV: str(tmp_path / "missing.txt")})


def test_oidc_provider_is_the_one_named_table_of_auth():
    assert access.oidc_provider({"redirect_uri": "x", "cookie_secret": "y"}) is None
    assert access.oidc_provider({"redirect_uri": "x", "lab": {"client_id": "c"}}) == "lab"


@pytest.mark.parametrize(
    ("role", "landing"),
    [(Role.VIEWER, "compare"), (Role.MEMBER, "launch"), (Role.ADMIN, "launch")],
)
def test_each_role_lands_on_a_page_its_menu_lists(role, landing):
    account = Account(name="someone", role=role)
    assert access.landing_page(account) == landing
    assert access.landing_page(account) in access.pages_for(account)


def test_the_role_table_in_docs_security_lists_each_roles_pages():
    """docs/security.md's "role | pages | may" table names exactly the pages each role's
    menu lists (`jobs.services.access.PAGES`), each row adding to the row above."""
    text = (Path(__file__).parents[3] / "docs" / "security.md").read_text(encoding="utf-8")
    rows = {
        cells[0]: cells[1]
        for line in text.splitlines()
        if line.startswith("| ")
        and (cells := [c.strip() for c in line.strip("|").split("|")])[0]
        in {"viewer", "member", "admin"}
    }
    listed: set[str] = set()
    for role in access.ROLE_ORDER:
        listed |= {title.strip() for title in rows[role.value].removeprefix("+").split(",")}
        assert listed == {access.PAGE_TITLES[stem] for stem in access.PAGES_BY_ROLE[role]}, role
