"""SoftGrade: the Streamlit entrypoint. Page config, sign-in, the shared sidebar and navigation.

Start it with ``python -m jobs up`` (the app and a worker). That command also hides
Streamlit's "Deploy" menu and turns Streamlit's legacy ``pages/`` listing off before the
first request (see ``jobs/services/serve_app.py``).

Served on 127.0.0.1 with no accounts, SoftGrade is the one-person tool it always was: no
sign-in, every page. Otherwise (accounts exist, or it is served beyond loopback) a sign-in
form comes first, and the menu lists only the pages the person's role allows
(`jobs.services.access.pages_for`); each restricted page also guards itself
(`pages.widgets.sign_in.require_page`). The pages, their titles, icons, menu sections and
roles are one registry, `jobs.services.access.PAGES`.
Every page's URL resolves whoever opens it: signed out, to the sign-in form (then that page);
signed in without the role, to the page's guard, which says so and shows nothing else.
A kiosk (`jobs.services.kiosk`) serves Grade a film alone.
"""

from __future__ import annotations

import streamlit as st

from jobs.services.access import PAGES, landing_page, page_entry, pages_for
from jobs.services.kiosk import kiosk_settings
from jobs.services.serve_app import redact_session_ids
from pages.widgets.shell import finish_sidebar, forget_sidebar, render_sidebar
from pages.widgets.sign_in import (
    SIGNED_OUT_KEY,
    cookie_pending,
    current_account,
    finish_sign_in,
    keep_cookie_in_step,
    render_account,
    sign_in_form,
)

st.set_page_config(page_title="SoftGrade", page_icon=":material/radiology:", layout="wide")
redact_session_ids()  # also under a plain `streamlit run app.py` (`jobs up` does it first)
forget_sidebar()


def sections() -> dict[str, list[tuple[str, str, str]]]:
    """Section -> (file stem under pages/, title, icon), in menu order, from
    `jobs.services.access.PAGES`."""
    menu: dict[str, list[tuple[str, str, str]]] = {}
    for page in PAGES:
        menu.setdefault(page.section, []).append((page.stem, page.title, page.icon))
    return menu


MENU = sections()


def menu_for(allowed: tuple[str, ...], first: str) -> dict[str, list[st.Page]]:
    """The menu cut to the pages a role lists; the root opens ``first``
    (`jobs.services.access.landing_page`).

    Sections left empty are dropped. Every page keeps its own URL path: Streamlit serves a
    default page at the root only, so a typed ``/launch`` showed "Page not found" while
    Launch was the default. The root is therefore a hidden page that switches to ``first``.
    """
    kept = {
        section: [entry for entry in entries if entry[0] in allowed]
        for section, entries in MENU.items()
    }
    kept = {section: entries for section, entries in kept.items() if entries}
    menu = {
        section: [
            st.Page(f"pages/{stem}.py", title=title, icon=icon) for stem, title, icon in entries
        ]
        for section, entries in kept.items()
    }
    landing = next(page for pages in menu.values() for page in pages if page.url_path == first)

    def open_landing_page() -> None:
        st.switch_page(landing)

    root = st.Page(open_landing_page, title=landing.title, default=True, visibility="hidden")
    # The other pages stay reachable by URL but out of the menu, so that a bookmark of one
    # runs that page's guard (which says the role does not allow it) rather than Streamlit's
    # "Page not found" over the default page.
    refused = [
        st.Page(f"pages/{stem}.py", title=title, icon=icon, visibility="hidden")
        for entries in MENU.values()
        for stem, title, icon in entries
        if stem not in allowed
    ]
    menu[next(reversed(menu))].extend([*refused, root])
    return menu


def sign_in_pages() -> list[st.Page]:
    """The sign-in form, at the app's root and at every page's URL (hidden from the menu).

    A signed-out visitor opening a page's URL (a bookmark, or the page they were on when
    they signed out) gets the form there, not "Page not found", and once signed in the same
    URL opens that page: a page's identity is its URL path, and the rerun after sign-in keeps it,
    query string included, so a shared view's link (`pages.widgets.view_state`) opens that view.
    """
    hidden = [
        st.Page(sign_in_form, title="Sign in", url_path=stem, visibility="hidden")
        for entries in MENU.values()
        for stem, _, _ in entries
    ]
    return [st.Page(sign_in_form, title="Sign in", icon=":material/login:", default=True), *hidden]


def kiosk_pages() -> list[st.Page]:
    """Grade a film alone, at the root; every other page's URL leads back to it.

    A bookmark or a typed URL of another page (``/queue``) on the kiosk then opens Grade a
    film without Streamlit's "Page not found" note over it, and shows nothing else.
    """
    demo = page_entry("demo")
    grade = st.Page(f"pages/{demo.stem}.py", title=demo.title, icon=demo.icon)

    def back_to_grade_a_film() -> None:
        st.switch_page(grade)

    others = [
        st.Page(back_to_grade_a_film, title=title, url_path=stem, visibility="hidden")
        for entries in MENU.values()
        for stem, title, _ in entries
        if stem != demo.stem
    ]
    return [grade, *others]


if kiosk_settings() is not None:
    # `python -m jobs up --kiosk / --demo`: Grade a film alone, no menu, no sidebar, no sign-in.
    st.navigation(kiosk_pages(), position="hidden").run()
    st.stop()

account = current_account()
if account is None:
    # Signed out, or the session ended: only the sign-in form, no menu, no sidebar (the
    # browser kept an empty grey sidebar open after sign-out until it is collapsed).
    st.set_page_config(initial_sidebar_state="collapsed")
    pages = sign_in_pages()
    signing_in = st.navigation(pages, position="hidden")
    if st.session_state.pop(SIGNED_OUT_KEY, False) and signing_in is not pages[0]:
        st.switch_page(pages[0])  # the form at the root: the next person's first page follows
    keep_cookie_in_step()  # sign-out's cookie cleared
    signing_in.run()
    st.stop()
# Signed in: the sidebar opens again (as Streamlit's "auto" does: open on a wide screen,
# shut on a phone), else it stayed shut from the sign-in form and hid the menu and sign-out.
st.set_page_config(initial_sidebar_state="auto")
if cookie_pending():
    # Just signed in: "Signed in as" waits for the cookie (`finish_sign_in`: written, then the
    # same address opened again), so no other address opened meanwhile finds none.
    st.navigation(menu_for(pages_for(account), landing_page(account)), position="hidden")
    finish_sign_in()
    st.stop()
navigation = st.navigation(menu_for(pages_for(account), landing_page(account)))
keep_cookie_in_step()  # a cookie still to clear or to write (e.g. the known client's)
render_account(account)
render_sidebar(account)  # its worker and queue status follows the page's heading
navigation.run()
finish_sidebar()  # a page that drew no heading through `page_title`
