"""Who is using the app: sign-in (a SoftGrade account or the lab's identity provider),
sign-out, the signed-in name in the sidebar, and the guard every restricted page calls."""

from __future__ import annotations

import contextlib
import weakref
from pathlib import Path
from typing import Any

import streamlit as st

from jobs.services import access
from jobs.services.access import (
    LOCAL_ACCOUNT,
    PAGE_TITLES,
    oidc_account,
    oidc_provider,
    oidc_roles,
    pages_for,
    single_user_mode,
)
from jobs.services.page_store import Account, Role, StoreError
from jobs.services.page_store import audit as store_audit
from jobs.services.page_store import sign_in as store_sign_in
from jobs.services.page_store import users as store_users
from pages.present.user_text import plain, said
from pages.widgets.reads import store_path, store_unusable

# The one thing sign-in keeps in the browser's session: the session token (never the name,
# role or password), checked against the store on every rerun; also in a cookie (below).
TOKEN_KEY = "softgrade_token"

# The same token in a browser cookie, so that a reload or a new tab stays signed in
# (docs/security.md, "Staying signed in", says what it is and what holding it allows).
COOKIE = "softgrade_session"
# A token to write into the cookie on the next run (set by sign-in), and a flag to clear it
# (set by sign-out and by a cookie the store no longer accepts).
COOKIE_TO_WRITE_KEY = "softgrade_cookie_to_write"
COOKIE_TO_CLEAR_KEY = "softgrade_cookie_to_clear"
# The cookie token the store refused in this browser session: not asked about again.
COOKIE_REFUSED_KEY = "softgrade_cookie_refused"

# The browser's known-client token (`store.sign_in.known_client_token`), kept after sign-in so
# that strangers' failed tries at the name never keep this browser out
# (docs/security.md, "Failed sign-ins"). It is not a sign-in: the password is still needed.
KNOWN_CLIENT_COOKIE = "softgrade_known_client"
KNOWN_CLIENT_TO_WRITE_KEY = "softgrade_known_client_to_write"
KNOWN_CLIENT_MAX_AGE_S = 180 * 24 * 3600

# The connection (Streamlit's websocket client) the session token in ``TOKEN_KEY`` belongs to,
# as a weak reference. Streamlit lets a browser reconnect to a live session by presenting its
# session id; the token then stays in the session's state. It is honoured only on the
# connection that signed in, or on one that presents the same token in its cookie, so a
# client that learnt a session id gets the sign-in form, not the session.
BOUND_KEY = "softgrade_bound_connection"
# Who this browser session was signed in as (kept on the server, in the session's state, never
# sent to the browser), so that when the store stops accepting the session the sign-in form
# can say why: the account was disabled or removed, or the session ended.
SIGNED_IN_NAME_KEY = "softgrade_signed_in_name"
SESSION_ENDED_KEY = "softgrade_session_ended"
ACCOUNT_DISABLED = (
    "Your account was disabled by an admin, so you were signed out. Ask an admin to enable "
    "it again."
)
ACCOUNT_REMOVED = "Your account was removed by an admin, so you were signed out."
SESSION_ENDED = (
    "Your session ended: it was idle too long, your password was changed, or you signed out "
    "in another tab. Sign in again."
)

# Set by sign-out so that the sign-in form opens at the app's root, not at the page the last
# person was on: whoever signs in next lands on their own first page (app.py reads it).
SIGNED_OUT_KEY = "softgrade_signed_out"


# Whether people must sign in, noted once per script run: app.py and the page's guard both
# ask (`current_account`), and each answer opens the store (15-50 ms on a busy machine, before
# the page's heading). Noted on the run's context (one per browser session, kept across its
# runs) beside the run's own cursor table, which Streamlit makes anew for every run.
_NOTED_ATTR = "_softgrade_signing_in_needed"


def signing_in_needed() -> bool:
    """Whether people must sign in: accounts exist, or the app is served beyond loopback.
    Read from the store once per script run (a new run reads it again)."""
    from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

    ctx = get_script_run_ctx()
    run = getattr(ctx, "cursors", None)
    noted = getattr(ctx, _NOTED_ATTR, None)
    if run is not None and noted is not None and noted[0] is run:
        return noted[1]
    needed = not single_user_mode(has_accounts=store_users.has_accounts(path=store_path()))
    if run is not None:
        # A context that took no new attribute would be asked every time, as before.
        with contextlib.suppress(AttributeError):
            setattr(ctx, _NOTED_ATTR, (run, needed))
    return needed


def current_account() -> Account | None:
    """Who is using this browser session: `LOCAL_ACCOUNT` in single-user mode, the account
    of the session token, or the lab account signed in through OIDC (None when signed out,
    expired or disabled). A store that cannot be read stops the page with its reason."""
    try:
        if not signing_in_needed():
            return LOCAL_ACCOUNT
        if (account := _oidc_account()) is not None:
            return account
        token = _bound_token() or _cookie_token()
        account = store_users.validate_session(token, path=store_path()) if token else None
    except StoreError as exc:
        store_unusable(exc)
    if account is not None:
        st.session_state[TOKEN_KEY] = token  # a reload's cookie, kept for this session
        _bind_to_connection()
        st.session_state[SIGNED_IN_NAME_KEY] = account.name
    elif token:
        # Expired or revoked: forget it (and clear the cookie) so the sign-in form shows,
        # saying why when this browser session was signed in.
        st.session_state.pop(TOKEN_KEY, None)
        if name := st.session_state.pop(SIGNED_IN_NAME_KEY, None):
            st.session_state[SESSION_ENDED_KEY] = why_signed_out(name)
        if token == _cookie_token():
            st.session_state[COOKIE_REFUSED_KEY] = token
            st.session_state[COOKIE_TO_CLEAR_KEY] = True
    return account


def current_connection() -> object | None:
    """The websocket connection this script run answers (Streamlit's session client), or
    None where there is none to tell apart (AppTest and bare runs have no real runtime). A
    reconnect, or another browser taking the session over by its id, is a new connection."""
    try:
        from streamlit import runtime
        from streamlit.runtime import Runtime
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

        ctx = get_script_run_ctx()
        if ctx is None or not runtime.exists() or type(runtime.get_instance()) is not Runtime:
            return None
        return runtime.get_instance().get_client(ctx.session_id)
    except Exception:
        return None


def _bind_to_connection() -> None:
    """Note that this session's token belongs to the connection now answered."""
    connection = current_connection()
    try:
        st.session_state[BOUND_KEY] = weakref.ref(connection) if connection is not None else None
    except TypeError:  # a connection that cannot be weakly referenced: bound to none
        st.session_state[BOUND_KEY] = None


def _bound_token() -> str | None:
    """The session's token when this connection may use it: the connection that signed in
    (or that brought the token in its cookie), or any connection presenting the same
    cookie. Where there is no connection to tell apart (AppTest), the token is used."""
    token = st.session_state.get(TOKEN_KEY)
    if not token:
        return None
    connection = current_connection()
    if connection is None or token == _cookie_token():
        return token
    bound = st.session_state.get(BOUND_KEY)
    if bound is not None and bound() is connection:
        return token
    # Another connection holds this session (a client that presented the session's id, or a
    # reconnect without the cookie): it gets the sign-in form; the session itself goes on
    # for the browser that holds the cookie.
    st.session_state.pop(TOKEN_KEY, None)
    st.session_state.pop(BOUND_KEY, None)
    return None


def why_signed_out(name: str) -> str:
    """Why the store no longer accepts ``name``'s session: the account was disabled or
    removed, or the session itself ended (told only to the browser session it was)."""
    try:
        account = store_users.get_user(name, path=store_path())
    except StoreError:
        return ACCOUNT_REMOVED
    return ACCOUNT_DISABLED if account.disabled else SESSION_ENDED


def _cookie_token() -> str | None:
    """The session token the browser sent in its cookie when this session connected, unless
    the store refused it already."""
    try:
        token = st.context.cookies.get(COOKIE)
    except Exception:
        return None
    if not isinstance(token, str) or token == st.session_state.get(COOKIE_REFUSED_KEY):
        return None
    return token


def _secure_origin() -> bool:
    """Whether the browser reached the app over https (the cookie is then marked Secure)."""
    try:
        return str(st.context.url or "").startswith("https://")
    except Exception:
        return False


def cookie_pending() -> bool:
    """Whether sign-in has just issued a token that the browser's cookie does not hold yet."""
    return COOKIE_TO_WRITE_KEY in st.session_state


#: Said while the cookie is written and the page opens again with it.
SIGNING_IN = "Signing in…"
#: Said under it, for a browser that refuses the cookie (the page would then stay).
COOKIE_REFUSED_NOTE = (
    "If this stays, the browser refused SoftGrade's sign-in cookie: allow cookies for this "
    "address, then sign in again."
)


def finish_sign_in() -> None:
    """Sign-in's last step: write the cookie, then open the same address again with it.

    Issue 39: the page said "Signed in as" 0.3-0.4 s before the browser held the cookie,
    and opening another address in that gap found no cookie and showed the sign-in form.
    Now nothing says "signed in" until the cookie is there: this run shows only
    :data:`SIGNING_IN`; its script sets the cookie and, once the browser holds it, reloads the
    page, whose new session is signed in by that cookie (query string kept, so a shared
    view's link opens that view)."""
    st.markdown(f"### {SIGNING_IN}")
    st.caption(COOKIE_REFUSED_NOTE)
    keep_cookie_in_step(reload=True)


def keep_cookie_in_step(*, reload: bool = False) -> None:
    """Write or clear the sign-in cookie in the browser when sign-in or sign-out asked to
    (``reload``: then, once the browser holds the new cookie, open the page again).

    Streamlit offers no server-side way to set a cookie on its pages, so a one-line script
    sets it (``SameSite=Strict``, ``Secure`` over https, ``Max-Age`` the session's longest
    life); it cannot be HttpOnly (docs/security.md says what that means). The token in it is
    the session's own: the store keeps only its SHA-256, and sign-out, expiry or removing the
    account end it there, whatever the browser still holds.
    """
    token = st.session_state.pop(COOKIE_TO_WRITE_KEY, None)
    clear = st.session_state.pop(COOKIE_TO_CLEAR_KEY, False)
    known = st.session_state.pop(KNOWN_CLIENT_TO_WRITE_KEY, None)
    if token is None and not clear and known is None:
        return
    flags = "; Path=/; SameSite=Strict" + ("; Secure" if _secure_origin() else "")
    cookies = []
    if token is not None:
        max_age = int(store_users.SESSION_MAX_AGE_H * 3600)
        cookies.append(f"{COOKIE}={token}{flags}; Max-Age={max_age}")
    elif clear:
        cookies.append(f"{COOKIE}={flags}; Max-Age=0")
    if known is not None:
        cookies.append(f"{KNOWN_CLIENT_COOKIE}={known}{flags}; Max-Age={KNOWN_CLIENT_MAX_AGE_S}")
    # Both tokens are secrets.token_urlsafe (and a hex digest): letters, digits, '-', '_' and
    # '.' only, safe in a string.
    script = " ".join(f"document.cookie = {cookie!r};" for cookie in cookies)
    if reload and token is not None:
        # Reload only once the cookie is readable back: a browser refusing it stays here.
        script += f" if (document.cookie.includes({f'{COOKIE}={token}'!r})) location.reload();"
    st.html(f"<script>{script}</script>", unsafe_allow_javascript=True)


OIDC_AUDITED_KEY = "softgrade_oidc_audited"


def _secrets_section(name: str) -> dict[str, Any] | None:
    """A top-level table of ``.streamlit/secrets.toml`` as a dict, or None (no file, no table)."""
    try:
        section = st.secrets.get(name)
    except Exception:
        return None
    if section is None:
        return None
    return section.to_dict() if hasattr(section, "to_dict") else section


def oidc_role_mapping() -> dict[str, Role]:
    """The e-mail (or @domain) -> role mapping for sign-in through the identity provider.

    Raises:
        ValueError: The mapping is misconfigured (the message lists every bad entry).
    """
    return oidc_roles(_secrets_section("softgrade") or {})


def oidc_configured() -> bool:
    """Whether the lab configured an identity provider for `st.login`."""
    return bool(_secrets_section("auth"))


def _oidc_signed_in() -> bool:
    try:
        return bool(st.user.is_logged_in)
    except Exception:
        return False


def _oidc_account() -> Account | None:
    """The account of the person signed in through OIDC, with the role the mapping gives
    their e-mail; stops the page when the mapping gives them none."""
    if not oidc_configured() or not _oidc_signed_in():
        return None
    email = str(st.user.get("email") or "")
    try:
        roles = oidc_role_mapping()
    except ValueError as exc:
        st.error(f"Sign-in through the lab account is misconfigured: {said(exc)}")
        st.stop()
    account = oidc_account(email, roles)
    if account is None:
        st.error(
            f"{plain(email) or 'This lab account'} has no access to SoftGrade. Ask an admin to add "
            "your e-mail to the role mapping (docs/security.md says how).",
            icon=":material/lock:",
        )
        st.button("Sign out", key="oidc_sign_out", on_click=st.logout)
        st.stop()
    if st.session_state.get(OIDC_AUDITED_KEY) != account.name:
        store_audit.record(
            "sign_in",
            actor=account.name,
            target=account.name,
            detail=store_audit.OIDC_SIGN_IN_DETAIL,
            path=store_path(),
        )
        st.session_state[OIDC_AUDITED_KEY] = account.name
    return account


def require_page(page_file: str) -> Account:
    """The guard every restricted page calls with its ``__file__`` right after
    `run_inside_shell`.

    The page is named by its file's stem, its key in `jobs.services.access.PAGES`. Returns the
    account when its role lists the page; otherwise says why and stops the page (a page
    opened by its URL without the role shows nothing else).
    """
    stem = Path(page_file).stem
    account = current_account()
    if account is None:
        ended = st.session_state.get(SESSION_ENDED_KEY)
        st.warning(ended or "Sign in to open this page.", icon=":material/lock:")
        st.stop()
    if stem not in pages_for(account):
        title = PAGE_TITLES.get(stem, stem)
        st.error(
            f"**{title}** is not open to {plain(account.name)} ({account.role.value}). "
            "Ask an admin for another role if you need it.",
            icon=":material/lock:",
        )
        st.stop()
    return account


def sign_in_form() -> None:
    """Name and password, and the lab's identity provider when one is configured; on
    success keep only the session token and rerun."""
    st.title("Sign in to SoftGrade")
    if ended := st.session_state.get(SESSION_ENDED_KEY):
        st.warning(ended, icon=":material/lock_clock:")
    if oidc_configured():
        provider = oidc_provider(_secrets_section("auth") or {})
        st.button(
            "Sign in with your lab account",
            key="oidc_sign_in",
            type="primary",
            icon=":material/badge:",
            on_click=st.login,
            args=(provider,) if provider else (),
        )
        st.caption("Or with a SoftGrade account:")
    with st.form("sign_in"):
        name = st.text_input("Name", key="sign_in_name")
        password = st.text_input("Password", type="password", key="sign_in_password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if not submitted:
        return
    name = name.strip()
    try:
        _, token = store_sign_in.sign_in(
            name,
            password,
            client=client_address(),
            known_client=_cookie(KNOWN_CLIENT_COOKIE),
            path=store_path(),
        )
        known = store_sign_in.known_client_token(name, path=store_path())
    except (store_users.SignInError, StoreError) as exc:
        st.error(f"Could not sign in: {said(exc)}.", icon=":material/lock:")
        return
    st.session_state[TOKEN_KEY] = token
    _bind_to_connection()
    st.session_state[COOKIE_TO_WRITE_KEY] = token
    st.session_state[KNOWN_CLIENT_TO_WRITE_KEY] = known
    st.session_state.pop(SESSION_ENDED_KEY, None)
    st.rerun()


def sign_out() -> None:
    """Button callback: end the session in the store, forget the token and clear the cookie."""
    token = st.session_state.pop(TOKEN_KEY, None)
    st.session_state.pop(SIGNED_IN_NAME_KEY, None)  # signed out on purpose: nothing to explain
    st.session_state[SIGNED_OUT_KEY] = True
    st.session_state[COOKIE_TO_CLEAR_KEY] = True
    if (cookie := _cookie_token()) is not None:
        st.session_state[COOKIE_REFUSED_KEY] = cookie  # ended below: not to be tried again
    if token:
        store_users.sign_out(token, path=store_path())
    if _oidc_signed_in():
        st.session_state.pop(OIDC_AUDITED_KEY, None)
        st.logout()


def _cookie(name: str) -> str | None:
    """A cookie the browser sent when this connection opened, if it is text."""
    try:
        value = st.context.cookies.get(name)
    except Exception:
        return None
    return value if isinstance(value, str) else None


def connection_details() -> tuple[str | None, list[str], str | None]:
    """The connection's own address (None: loopback), its X-Forwarded-For headers and its
    X-Real-IP header, as Streamlit has them from the websocket's opening request."""
    peer = st.context.ip_address
    headers = st.context.headers
    return peer, list(headers.get_all("X-Forwarded-For")), headers.get("X-Real-IP")


def client_address() -> str | None:
    """Where the browser is (kept on sessions, studies and sign-in audit lines): the
    connection's address, or behind `up --behind-proxy` the one the proxy forwarded
    (`jobs.services.access.client_address`). None where Streamlit has no connection (AppTest)."""
    try:
        peer, forwarded_for, real_ip = connection_details()
    except Exception:
        return None
    # AppTest's context hands back stand-in objects, not an address and headers.
    if not (peer is None or isinstance(peer, str)) or not all(
        isinstance(h, str) for h in forwarded_for
    ):
        return None
    return access.client_address(
        peer,
        forwarded_for,
        real_ip if isinstance(real_ip, str) else None,
        behind_proxy=access.behind_proxy(),
        hops=access.proxy_hops(),
    )


def render_account(account: Account) -> None:
    """The signed-in name and role, and sign-out, at the top of the sidebar."""
    if account is LOCAL_ACCOUNT:
        return
    with st.sidebar:
        st.markdown(f"Signed in as **{plain(account.name)}** ({account.role.value})")
        st.button("Sign out", key="sign_out", on_click=sign_out, icon=":material/logout:")
