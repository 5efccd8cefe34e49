"""What a viewer is not shown or allowed on shared pages (issue 31): the store's place on
the server's disk, and the button that loads the bundled reference study."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from store.db import init_schema
from tests.helpers.pages import ROOT, signed_in


def _sidebar_store(at: AppTest) -> str:
    return next(str(c.value) for c in at.sidebar.caption if str(c.value).startswith("Store:"))


def test_only_an_admin_sees_where_the_store_lies_on_disk(home):
    path = home / "softgrade.duckdb"
    init_schema(path)
    viewer = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    viewer.session_state["softgrade_token"] = _token_for("vera", "viewer", path)
    viewer.run()
    assert not viewer.exception
    shown = _sidebar_store(viewer)
    assert "softgrade.duckdb" in shown and str(home) not in shown
    admin = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    admin.session_state["softgrade_token"] = _token_for("ada", "admin", path)
    admin.run()
    assert str(home) in _sidebar_store(admin)


def _token_for(name: str, role: str, path: Path) -> str:
    return signed_in("compare", name, role, path).session_state["softgrade_token"]


def test_a_viewer_is_not_offered_the_reference_study_load(home):
    path = home / "softgrade.duckdb"
    init_schema(path)
    at = signed_in("compare", "vera", "viewer", path).run()
    assert not at.exception
    assert not [b for b in at.button if b.key == "load_reference_study"]
    assert any("A member or an admin can load" in str(c.value) for c in at.caption)
    member = signed_in("compare", "mo", "member", path).run()
    assert [b for b in member.button if b.key == "load_reference_study"]
