"""Who may open which page and do what, and which folders films may be imported from.

One place for the policy the app and the CLI enforce:
- `PAGES`: the one page registry (stem, title, icon, menu section, lowest role); app.py's
  navigation, the pages' guards, `PAGE_TITLES` and `PAGES_BY_ROLE` (the pages each role's
  navigation lists; a page opened by URL without the role shows nothing else) derive from it.
- `can` / `require`: actions (launch, cancel own or any job, archive, delete, ...).
- `served_beyond_loopback` / `single_user_mode`: served on 127.0.0.1 with no accounts,
  SoftGrade stays the one-person tool it was (everyone is the local admin); beyond loopback
  `python -m jobs up` refuses to start without accounts.
- `confine_import_path`: import paths stay inside the data roots.
- `oidc_roles` / `oidc_account`: the role of a person signed in through the lab's identity
  provider (``st.login``), from a mapping of e-mail (or ``@domain``) to role.

No streamlit here: the page side calls these functions.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from store.audit import LOCAL_ACTOR
from store.db import softgrade_home

# NAME_PATTERN and password_problem, the account rules the Accounts page checks a new account
# against before asking: the store's own, passed on (``X as X``) so that both say the same.
from store.users import NAME_PATTERN as NAME_PATTERN
from store.users import Account, Role
from store.users import password_problem as password_problem

# The address `python -m jobs up` serves on, set by it for the app's process.
SERVED_HOST_ENV = "SOFTGRADE_SERVED_HOST"
# What `up --behind-proxy` sets it to: the app listens on loopback, but a reverse proxy lets
# anyone reach it, so it counts as beyond loopback.
BEHIND_PROXY = "reverse-proxy"
DATA_ROOTS_ENV = "SOFTGRADE_DATA_ROOTS"
# How many reverse proxies stand between the browsers and the app (default 1); each
# appends the address it saw to X-Forwarded-For, so the browser's is that many from the right.
PROXY_HOPS_ENV = "SOFTGRADE_PROXY_HOPS"
# The address of a browser on the server itself: Streamlit reports loopback clients as None.
LOOPBACK_CLIENT = "127.0.0.1"

# The person in single-user mode (127.0.0.1, no accounts): may do everything.
LOCAL_ACCOUNT = Account(name="local", role=Role.ADMIN)


def actor_name(account: Account | None) -> str:
    """The name an account's actions are recorded under (`LOCAL_ACTOR` for nobody)."""
    return account.name if account is not None else LOCAL_ACTOR


class Action(StrEnum):
    """What a person may be allowed to do."""

    VIEW_RESULTS = "view_results"
    GRADE_FILM = "grade_film"
    LAUNCH = "launch"
    IMPORT = "import"
    CANCEL_OWN = "cancel_own"
    EDIT_OWN_STUDY = "edit_own_study"  # rename, notes, tags of studies they launched
    CANCEL_ANY = "cancel_any"
    EDIT_ANY_STUDY = "edit_any_study"
    ARCHIVE = "archive"
    DELETE = "delete"
    MANAGE_ACCOUNTS = "manage_accounts"
    VIEW_AUDIT = "view_audit"
    SECOND_READING = "second_reading"  # grade a film again beside its label (issue 41)


_VIEWER = frozenset({Action.VIEW_RESULTS, Action.GRADE_FILM})
_MEMBER = _VIEWER | {
    Action.LAUNCH,
    Action.IMPORT,
    Action.CANCEL_OWN,
    Action.EDIT_OWN_STUDY,
    Action.SECOND_READING,
}
_ADMIN = frozenset(Action)
ACTIONS_BY_ROLE: dict[Role, frozenset[Action]] = {
    Role.VIEWER: _VIEWER,
    Role.MEMBER: _MEMBER,
    Role.ADMIN: _ADMIN,
}


@dataclass(frozen=True)
class PageEntry:
    """One page of the app, as the menu, the guards and the roles know it.

    Attributes:
        stem: Its file under pages/ without ``.py``, which is also its URL path.
        title: Its name in the menu and in the guard's message.
        icon: Its menu icon (a Streamlit ``:material/...:`` name).
        section: The menu section that lists it.
        role: The lowest role whose menu lists it; every higher role's does too.
    """

    stem: str
    title: str
    icon: str
    section: str
    role: Role


# Every page of the app, in menu order: the one registry that app.py's navigation, each
# page's guard (`pages.widgets.sign_in.require_page`) and `PAGES_BY_ROLE` derive from.
PAGES: tuple[PageEntry, ...] = (
    PageEntry("launch", "Launch", ":material/rocket_launch:", "Run studies", Role.MEMBER),
    PageEntry("queue", "Jobs", ":material/list_alt:", "Run studies", Role.MEMBER),
    PageEntry("data", "Data", ":material/photo_library:", "Run studies", Role.VIEWER),
    PageEntry("review", "Review crops", ":material/crop_free:", "Run studies", Role.MEMBER),
    PageEntry("compare", "Compare methods", ":material/leaderboard:", "Read results", Role.VIEWER),
    PageEntry(
        "explorer",
        "Search & learning curves",
        ":material/query_stats:",
        "Read results",
        Role.VIEWER,
    ),
    PageEntry("relationship", "KL × CPPD", ":material/grid_on:", "Read results", Role.VIEWER),
    PageEntry("attention", "Attention", ":material/visibility:", "Read results", Role.VIEWER),
    PageEntry(
        "second_reader", "Second reader", ":material/rate_review:", "Read results", Role.MEMBER
    ),
    PageEntry("demo", "Grade a film", ":material/radiology:", "Demonstrate", Role.VIEWER),
    PageEntry("accounts", "Accounts", ":material/manage_accounts:", "Administer", Role.ADMIN),
    PageEntry("audit", "Audit log", ":material/history:", "Administer", Role.ADMIN),
)

# Roles from the fewest pages and actions to the most.
ROLE_ORDER: tuple[Role, ...] = (Role.VIEWER, Role.MEMBER, Role.ADMIN)


def _role_lists(role: Role, page: PageEntry) -> bool:
    """Whether ``role`` is ``page.role`` or a higher one."""
    return ROLE_ORDER.index(role) >= ROLE_ORDER.index(page.role)


# Page stems each role's navigation lists, in menu order (derived from `PAGES`).
PAGES_BY_ROLE: dict[Role, tuple[str, ...]] = {
    role: tuple(page.stem for page in PAGES if _role_lists(role, page)) for role in ROLE_ORDER
}
# Page stem -> its title (the guard's message names the page with it).
PAGE_TITLES: dict[str, str] = {page.stem: page.title for page in PAGES}


class AccessDenied(ValueError):
    """The signed-in person's role does not allow the action (the message says which does)."""


class PathRefused(ValueError):
    """An import path outside the data roots."""


def can(account: Account, action: Action | str, *, owner: str | None = None) -> bool:
    """Whether ``account`` may do ``action``.

    Args:
        account: The signed-in account (`LOCAL_ACCOUNT` in single-user mode).
        action: An `Action`. ``cancel_own`` and ``edit_own_study`` also pass for any owner
            when the role has the ``_any`` action.
        owner: Who launched the job or study acted on (``studies.launched_by``).
    """
    action = Action(action)
    allowed = ACTIONS_BY_ROLE[account.role]
    if action is Action.CANCEL_OWN:
        return Action.CANCEL_ANY in allowed or (action in allowed and owner == account.name)
    if action is Action.EDIT_OWN_STUDY:
        return Action.EDIT_ANY_STUDY in allowed or (action in allowed and owner == account.name)
    return action in allowed


def require(account: Account, action: Action | str, *, owner: str | None = None) -> None:
    """Raise `AccessDenied` unless `can` allows it."""
    if can(account, action, owner=owner):
        return
    action = Action(action)
    if (
        action in (Action.CANCEL_OWN, Action.EDIT_OWN_STUDY)
        and action in ACTIONS_BY_ROLE[account.role]
    ):
        raise AccessDenied(
            f"{account.name} ({account.role.value}) may {_WORDS[action]} only what they "
            f"launched; this was launched by {owner or 'someone else'}. An admin may."
        )
    roles = [r.value for r in Role if action in ACTIONS_BY_ROLE[r]]
    raise AccessDenied(
        f"{account.name} ({account.role.value}) may not {_WORDS[action]}; "
        f"that needs the role {' or '.join(roles)}"
    )


_WORDS = {
    Action.VIEW_RESULTS: "read results",
    Action.GRADE_FILM: "grade a film",
    Action.LAUNCH: "launch studies",
    Action.IMPORT: "import films",
    Action.CANCEL_OWN: "cancel or resume jobs",
    Action.EDIT_OWN_STUDY: "rename or annotate studies",
    Action.CANCEL_ANY: "cancel or resume other people's jobs",
    Action.EDIT_ANY_STUDY: "rename or annotate other people's studies",
    Action.ARCHIVE: "archive studies",
    Action.DELETE: "delete studies",
    Action.MANAGE_ACCOUNTS: "manage accounts",
    Action.SECOND_READING: "record second readings",
    Action.VIEW_AUDIT: "read the audit log",
}


def pages_for(account: Account) -> tuple[str, ...]:
    """The pages (file stems under pages/) ``account`` sees, in menu order."""
    return PAGES_BY_ROLE[account.role]


# The page each role opens at the app's root: Launch for whoever may launch, the results
# (Compare methods) for a viewer. Other pages keep their menu order.
LANDING_BY_ROLE: dict[Role, str] = {
    Role.VIEWER: "compare",
    Role.MEMBER: "launch",
    Role.ADMIN: "launch",
}


def landing_page(account: Account) -> str:
    """The page stem ``account`` opens first; always one of `pages_for(account)`."""
    return LANDING_BY_ROLE[account.role]


def page_entry(stem: str) -> PageEntry:
    """The registered page of file stem ``stem``.

    Raises:
        KeyError: No page of that stem is registered in `PAGES` (a page file added without
            its row).
    """
    for page in PAGES:
        if page.stem == stem:
            return page
    raise KeyError(f"no page {stem!r} in jobs.services.access.PAGES; add its row there")


# -- where SoftGrade is served ------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether ``host`` is reachable only from this machine (127.0.0.0/8, ::1, localhost).

    Any other name or address, 0.0.0.0 included, counts as beyond loopback.
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip().strip("[]")).is_loopback
    except ValueError:
        return False


def served_host(env: Mapping[str, str] | None = None) -> str:
    """The address the app is served on (`SERVED_HOST_ENV`; 127.0.0.1 when unset)."""
    env = os.environ if env is None else env
    return env.get(SERVED_HOST_ENV) or "127.0.0.1"


def served_beyond_loopback(env: Mapping[str, str] | None = None) -> bool:
    """Whether people on other machines can reach the app."""
    return not is_loopback(served_host(env))


def single_user_mode(*, has_accounts: bool, env: dict[str, str] | None = None) -> bool:
    """No sign-in: served on loopback with no accounts (everyone is `LOCAL_ACCOUNT`)."""
    return not has_accounts and not served_beyond_loopback(env)


def behind_proxy(env: Mapping[str, str] | None = None) -> bool:
    """Whether `python -m jobs up --behind-proxy` serves the app (browsers reach it through a
    reverse proxy, which names each browser's address in X-Forwarded-For)."""
    env = os.environ if env is None else env
    return env.get(SERVED_HOST_ENV) == BEHIND_PROXY


def proxy_hops(env: Mapping[str, str] | None = None) -> int:
    """How many trusted proxies append to X-Forwarded-For (`PROXY_HOPS_ENV`, default 1)."""
    env = os.environ if env is None else env
    raw = env.get(PROXY_HOPS_ENV, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1


def _address(text: str | None) -> str | None:
    """``text`` as a normalised IP address, or None when it is not one."""
    try:
        return str(ipaddress.ip_address((text or "").strip().strip("[]")))
    except ValueError:
        return None


def client_address(
    peer: str | None,
    forwarded_for: list[str],
    real_ip: str | None,
    *,
    behind_proxy: bool,
    hops: int = 1,
) -> str:
    """The browser's address, as the sign-in limits and the audit log know it.

    Served directly, it is the connection's own address (``peer``: Streamlit's
    ``st.context.ip_address``, None for a browser on the server itself, which is
    `LOOPBACK_CLIENT`); headers are ignored, since any browser can send them. Behind the
    proxy (``behind_proxy``), every connection comes from the proxy, so the address is the
    one the last trusted proxy appended to X-Forwarded-For: the ``hops``-th entry from the
    right (entries further left were written by the browser, and may be made up); else the
    proxy's X-Real-IP; else the connection's own.

    Args:
        peer: The connection's address (None: loopback).
        forwarded_for: Every X-Forwarded-For header of the connection, in order.
        real_ip: Its X-Real-IP header, if any.
        behind_proxy: Whether `up --behind-proxy` serves the app.
        hops: How many trusted proxies append to X-Forwarded-For.
    """
    if behind_proxy:
        entries = [e.strip() for header in forwarded_for for e in header.split(",") if e.strip()]
        candidate = entries[-hops] if len(entries) >= hops else real_ip
        if (address := _address(candidate)) is not None:
            return address
    return _address(peer) or LOOPBACK_CLIENT


def refuse_unprotected_host(host: str, *, has_accounts: bool) -> str | None:
    """Why SoftGrade must not be served on ``host`` now, or None if it may."""
    if is_loopback(host) or has_accounts:
        return None
    where = "behind a reverse proxy" if host == BEHIND_PROXY else f"on {host}"
    return (
        f"refusing to serve {where}: anyone who can reach it could launch and cancel jobs, "
        "and there are no accounts to sign in with. Add an admin first:\n"
        "    python -m jobs users add NAME --role admin\n"
        "or serve on 127.0.0.1 only (the default)."
    )


# -- data roots -------------------------------------------------------------------------------


def data_roots(env: Mapping[str, str] | None = None) -> list[Path] | None:
    """Folders films may be imported from; None means anywhere.

    ``SOFTGRADE_DATA_ROOTS`` (folders separated by ``os.pathsep``) when set. Otherwise
    anywhere when served on loopback, and only under ``SOFTGRADE_HOME`` when served beyond
    it (the person at the browser need not be the one who owns the server's files).
    """
    env = os.environ if env is None else env
    raw = env.get(DATA_ROOTS_ENV, "")
    roots = [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]
    if roots:
        return [r.resolve() for r in roots]
    if not served_beyond_loopback(env):
        return None
    home = env.get("SOFTGRADE_HOME")
    return [Path(home).expanduser().resolve() if home else softgrade_home()]


def confine_import_path(path: str | Path, roots: list[Path] | None) -> Path:
    """The real path of ``path`` if it lies inside one of ``roots``; `PathRefused` if not.

    Links are followed and ``..`` resolved before the check, so neither leads out of a root.
    A relative path is taken inside the first root.

    Args:
        path: What the person typed (a folder or file to import).
        roots: From `data_roots`; None allows any path.

    Raises:
        PathRefused: The path (or where its links lead) is outside every root; the message
            names the roots and what led out.
    """
    text = str(path).strip()
    if not text:
        raise PathRefused("no path given; type the folder of films to import")
    raw = Path(text).expanduser()
    if roots is None:
        return raw.resolve()
    if not roots:
        raise PathRefused(f"importing is switched off: {DATA_ROOTS_ENV} names no folder")
    roots = [Path(r).resolve() for r in roots]
    if not raw.is_absolute():
        raw = roots[0] / raw
    real = raw.resolve()
    if any(real.is_relative_to(root) for root in roots):
        return real
    allowed = ", ".join(str(r) for r in roots)
    lexical = Path(os.path.normpath(raw))
    if any(lexical.is_relative_to(root) for root in roots):
        reason = f"it leads through a link to {real}"
    elif ".." in raw.parts:
        reason = f"its '..' leads to {lexical}"
    else:
        reason = "it is elsewhere"
    raise PathRefused(
        f"{text} is outside the folders films may be imported from ({allowed}): {reason}. "
        f"An admin sets these folders with {DATA_ROOTS_ENV}."
    )


# -- sign-in through the lab's identity provider (OIDC, Streamlit's st.login) -----------------

OIDC_ROLES_ENV = "SOFTGRADE_OIDC_ROLES"


def parse_oidc_roles(entries: Mapping[str, Any], *, source: str) -> dict[str, Role]:
    """E-mail (or ``@domain``) -> role, lower-cased, from a mapping read from ``source``.

    Raises:
        ValueError: One message listing every entry whose role is not viewer, member or
            admin, or whose key is not an e-mail address or ``@domain``.
    """
    roles: dict[str, Role] = {}
    problems: list[str] = []
    allowed = ", ".join(r.value for r in Role)
    for raw_key, raw_role in entries.items():
        key = str(raw_key).strip().lower()
        if "@" not in key or key.endswith("@") or " " in key:
            problems.append(f"{raw_key!r} is not an e-mail address or @domain")
            continue
        try:
            roles[key] = Role(str(raw_role).strip().lower())
        except ValueError:
            problems.append(f"{raw_key!r} has role {raw_role!r} (allowed: {allowed})")
    if problems:
        raise ValueError(f"{source}: " + "; ".join(problems))
    return roles


def read_oidc_roles_file(path: Path) -> dict[str, Role]:
    """The mapping in a text file: one ``e-mail role`` (or ``@domain role``) a line, ``#``
    starts a comment.

    Raises:
        ValueError: The file cannot be read, or lines that are not two words (all listed).
    """
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"cannot read {OIDC_ROLES_ENV} file {path}: {exc}") from exc
    entries: dict[str, str] = {}
    bad: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 2:
            bad.append(f"line {number} is not 'e-mail role'")
            continue
        entries[words[0]] = words[1]
    if bad:
        raise ValueError(f"{path}: " + "; ".join(bad))
    return parse_oidc_roles(entries, source=str(path))


def oidc_roles(
    softgrade_secrets: Mapping[str, Any], env: Mapping[str, str] | None = None
) -> dict[str, Role]:
    """The e-mail -> role mapping for OIDC sign-in.

    From the ``[softgrade.roles]`` table of ``.streamlit/secrets.toml`` and the file named
    by ``SOFTGRADE_OIDC_ROLES``; the file's entries win where both name an e-mail.

    Args:
        softgrade_secrets: The ``[softgrade]`` table of the secrets (may be empty).
        env: The environment (default ``os.environ``).
    """
    env = os.environ if env is None else env
    roles = parse_oidc_roles(
        softgrade_secrets.get("roles") or {}, source="[softgrade.roles] in secrets.toml"
    )
    if file := env.get(OIDC_ROLES_ENV, "").strip():
        roles.update(read_oidc_roles_file(Path(file).expanduser()))
    return roles


def oidc_account(email: str, roles: Mapping[str, Role]) -> Account | None:
    """The account of a person the identity provider signed in, or None (no access).

    The e-mail's own entry wins over its domain's (``@lab.org``); case does not matter.
    Unknown e-mails, and an empty one, get no access.
    """
    email = email.strip().lower()
    if "@" not in email:
        return None
    role = roles.get(email) or roles.get("@" + email.rsplit("@", 1)[1])
    return Account(name=email, role=role) if role else None


def oidc_provider(auth_secrets: Mapping[str, Any]) -> str | None:
    """The provider `st.login` should use: the one named sub-table of ``[auth]``
    (``[auth.lab]``), or None when ``[auth]`` itself holds the provider's settings."""
    named = [key for key, value in auth_secrets.items() if isinstance(value, Mapping)]
    return named[0] if len(named) == 1 else None
