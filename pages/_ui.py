"""Helpers shared by the pages: the store in use, cached reads, the sidebar.

Pages read through these cached wrappers (a few seconds' TTL) so that reruns do not hit the
store on every widget change, and never hold a DuckDB connection across reruns: a DuckDB
connection is not thread-safe, so none is kept in ``st.cache_resource``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator
from streamlit.errors import StreamlitAPIException

from engine import compare, stats
from engine.config import StudySpec
from jobs.access import (
    LOCAL_ACCOUNT,
    oidc_account,
    oidc_provider,
    oidc_roles,
    pages_for,
    single_user_mode,
)
from jobs.describe import format_devices
from pages import _exports
from pages._tables import (
    CORRECTION_ORDER,
    correction_label,
    format_test_table,
    method_title,
    progress_message,
    study_label,
    wilcoxon_seed_shortfall,
)
from store import audit as store_audit
from store import datasets as store_datasets
from store import jobs as store_jobs
from store import runs as store_runs
from store import studies as store_studies
from store import users as store_users
from store.bundle import imported_card
from store.db import StoreError, default_store_path, init_schema
from store.users import Account, Role

WORKER_ALIVE_WITHIN_S = 30.0
SIDEBAR_REFRESH_S = 5.0
STUDIES_DIR = Path(__file__).resolve().parent.parent / "studies"

# MIME type of a download, by the file name's suffix.
DOWNLOAD_TYPES = {".csv": "text/csv", ".tex": "text/x-tex"}

NO_WORKER_TITLE = "No worker is running: queued studies will wait."
NO_WORKER_HOW = (
    "Start one in a terminal, in the SoftGrade folder: `python -m jobs worker` "
    "(or `python -m jobs up` starts the app and a worker together)."
)


def run_inside_shell() -> None:
    """Rerun through ``app.py`` when Streamlit ran this page file on its own.

    Until ``st.navigation`` has run once in a server process, Streamlit treats a folder named
    ``pages/`` next to the entrypoint as its legacy multipage layout. So when the first
    session of a fresh server opens a sub-page URL (a bookmark, or a tab reconnecting after a
    restart), the page file runs alone: no sidebar, no page config, and a menu listing every
    file in ``pages/``. Turning the legacy mode off and rerunning makes Streamlit run
    ``app.py``, whose navigation opens the same page (both name it by its URL path). Every
    page calls this first; it does nothing once the shell is in charge.
    """
    from streamlit.runtime.pages_manager import PagesManager

    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


# The one thing sign-in keeps in the browser's session: the session token (never the name,
# role or password), checked against the store on every rerun.
TOKEN_KEY = "softgrade_token"
# Set by sign-out so that the sign-in form opens at the app's root, not at the page the last
# person was on: whoever signs in next lands on their own first page (app.py reads it).
SIGNED_OUT_KEY = "softgrade_signed_out"

# Pages by file stem -> the words of the guard's message.
PAGE_TITLES = {
    "launch": "Launch",
    "queue": "Jobs",
    "data": "Data",
    "review": "Review crops",
    "compare": "Compare methods",
    "explorer": "Search & learning curves",
    "relationship": "KL × CPPD",
    "attention": "Attention",
    "demo": "Grade a film",
    "accounts": "Accounts",
    "audit": "Audit log",
}


def signing_in_needed() -> bool:
    """Whether people must sign in: accounts exist, or the app is served beyond loopback."""
    return not single_user_mode(has_accounts=store_users.has_accounts(path=store_path()))


def current_account() -> Account | None:
    """Who is using this browser session: `LOCAL_ACCOUNT` in single-user mode, the account
    of the session token, or the lab account signed in through OIDC (None when signed out,
    expired or disabled). A store that cannot be read stops the page with its reason."""
    try:
        if not signing_in_needed():
            return LOCAL_ACCOUNT
        if (account := _oidc_account()) is not None:
            return account
        token = st.session_state.get(TOKEN_KEY)
        account = store_users.validate_session(token, path=store_path()) if token else None
    except StoreError as exc:
        store_unusable(exc)
    if account is None and token:
        # Expired or revoked: forget it so the sign-in form shows.
        st.session_state.pop(TOKEN_KEY, None)
    return account


# -- sign-in through the lab's identity provider (st.login), when .streamlit/secrets.toml
# has an [auth] section; roles come from jobs.access.oidc_roles.

OIDC_AUDITED_KEY = "softgrade_oidc_audited"


def _secrets_section(name: str) -> dict[str, Any] | None:
    """A top-level table of ``.streamlit/secrets.toml`` as a dict, or None (no file, no table)."""
    try:
        section = st.secrets.get(name)
    except Exception:  # a missing or unparsable secrets file means "not set"
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
    except Exception:  # runtimes without auth support (AppTest) have no user
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
        st.error(f"Sign-in through the lab account is misconfigured: {exc}")
        st.stop()
    account = oidc_account(email, roles)
    if account is None:
        st.error(
            f"{email or 'This lab account'} has no access to SoftGrade. Ask an admin to add "
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


def require_page(stem: str) -> Account:
    """The guard every restricted page calls right after `run_inside_shell`.

    Returns the account when its role lists the page; otherwise says why and stops the page
    (a page opened by its URL without the role shows nothing else).
    """
    account = current_account()
    if account is None:
        st.warning("Sign in to open this page.", icon=":material/lock:")
        st.stop()
    if stem not in pages_for(account):
        title = PAGE_TITLES.get(stem, stem)
        st.error(
            f"**{title}** is not open to {account.name} ({account.role.value}). Ask an admin "
            "for another role if you need it.",
            icon=":material/lock:",
        )
        st.stop()
    return account


def sign_in_form() -> None:
    """Name and password, and the lab's identity provider when one is configured; on
    success keep only the session token and rerun."""
    st.title("Sign in to SoftGrade")
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
    try:
        _, token = store_users.sign_in(
            name.strip(), password, client=client_address(), path=store_path()
        )
    except (store_users.SignInError, StoreError) as exc:
        st.error(f"Could not sign in: {exc}.", icon=":material/lock:")
        return
    st.session_state[TOKEN_KEY] = token
    st.rerun()


def sign_out() -> None:
    """Button callback: end the session in the store and forget the token."""
    token = st.session_state.pop(TOKEN_KEY, None)
    st.session_state[SIGNED_OUT_KEY] = True
    if token:
        store_users.sign_out(token, path=store_path())
    if _oidc_signed_in():
        st.session_state.pop(OIDC_AUDITED_KEY, None)
        st.logout()


def client_address() -> str | None:
    """Where the browser is, when Streamlit knows (kept on sessions and studies)."""
    try:
        address = st.context.ip_address
    except Exception:  # not every runtime (AppTest) has a request context
        return None
    # AppTest's context hands back a stand-in object, not an address.
    return address if isinstance(address, str) else None


def render_account(account: Account) -> None:
    """The signed-in name and role, and sign-out, at the top of the sidebar."""
    if account is LOCAL_ACCOUNT:
        return
    with st.sidebar:
        st.markdown(f"Signed in as **{account.name}** ({account.role.value})")
        st.button("Sign out", key="sign_out", on_click=sign_out, icon=":material/logout:")


# Stores this server process has set up or upgraded (`init_schema` once, not every rerun:
# it takes the write lock the worker needs).
_READY_STORES: set[str] = set()


def store_path() -> Path:
    """The store this app uses: ``$SOFTGRADE_HOME/softgrade.duckdb``.

    The first call in a server process creates it if missing and upgrades an older one
    before any page reads it. A store that cannot be used (truncated, not DuckDB, another
    program's, of a newer version) stops the page with one message; nothing in it is changed.
    """
    path = default_store_path()
    if str(path) not in _READY_STORES:
        try:
            init_schema(path)
        except StoreError as exc:
            store_unusable(exc)
        _READY_STORES.add(str(path))
    return path


STORE_UNUSABLE_TITLE = "SoftGrade cannot use its store"


def store_unusable(exc: StoreError) -> None:
    """Stop the page with why the store cannot be used and what to do (no traceback)."""
    st.error(f"**{STORE_UNUSABLE_TITLE}.** {exc}", icon=":material/database:")
    st.stop()


@st.cache_data(ttl=3, show_spinner=False)
def cached_alive_workers(path: str) -> pd.DataFrame:
    """The workers that beat recently."""
    return store_jobs.alive_workers(alive_within_s=WORKER_ALIVE_WITHIN_S, path=path)


@st.cache_data(ttl=2, show_spinner=False)
def cached_jobs(path: str) -> pd.DataFrame:
    """Every job with its progress, newest first."""
    return store_jobs.list_jobs(path=path)


@st.cache_data(ttl=2, show_spinner=False)
def cached_job_log(path: str, job_id: str) -> pd.DataFrame:
    """A job's log lines, oldest first."""
    return store_jobs.job_log(job_id, path=path)


@st.cache_data(ttl=10, show_spinner=False)
def cached_datasets(path: str) -> pd.DataFrame:
    """Registered datasets with their image and label counts."""
    return store_datasets.list_datasets(path=path)


@st.cache_data(ttl=30, show_spinner=False)
def cached_dataset_labels(path: str, dataset_id: str) -> pd.DataFrame:
    """One row per image of a dataset with its KL and CPPD grades."""
    return store_datasets.dataset_labels(dataset_id, path=path)


@st.cache_data(ttl=60, show_spinner=False)
def load_preset(name: str) -> dict[str, Any]:
    """The validated study of ``studies/<name>.yaml`` as a mapping (``StudySpec.to_dict``).

    Raises:
        SpecError: The preset file is missing or invalid.
    """
    return StudySpec.from_file(STUDIES_DIR / f"{name}.yaml").to_dict()


def clear_job_caches() -> None:
    """Forget cached job reads, after this session wrote a job or a cancel request."""
    cached_jobs.clear()
    cached_job_log.clear()


def alive_workers(path: Path) -> pd.DataFrame:
    """The workers that beat recently (cached for a few seconds)."""
    return cached_alive_workers(str(path))


def worker_has_gpu(path: Path) -> bool:
    """Whether any live worker reports a CUDA device."""
    try:
        workers = alive_workers(path)
    except StoreError:
        return False
    devices = [d for listed in workers["devices"] for d in json.loads(listed)]
    return any(d.startswith("cuda") for d in devices)


def warn_if_no_worker(path: Path) -> bool:
    """Show a prominent 'no worker' message with how to start one; return whether one is alive."""
    try:
        alive = not alive_workers(path).empty
    except StoreError as exc:
        st.warning(f"Worker health cannot be read right now: {exc}")
        return False
    if not alive:
        st.error(f"**{NO_WORKER_TITLE}** {NO_WORKER_HOW}", icon=":material/power_off:")
    return alive


def link_to_page(page: str, label: str, icon: str | None = None) -> None:
    """A link to another page of the app; plain text where the page is not in the menu.

    AppTest renders one page file alone, without ``app.py``'s navigation, so a page link
    there has no target; the text fallback keeps the page usable in both cases.
    """
    try:
        st.page_link(page, label=label, icon=icon)
    except StreamlitAPIException:
        st.caption(f"{label}: open it from the menu on the left.")


def render_sidebar() -> None:
    """Store in use, worker health and the queue size, on every page."""
    path = store_path()
    with st.sidebar:
        st.caption(f"Store: `{path}`")
        _sidebar_status(str(path))


@st.fragment(run_every=SIDEBAR_REFRESH_S)
def _sidebar_status(path: str) -> None:
    """Worker health and queue counts; reruns alone so they stay current on every page."""
    try:
        workers = alive_workers(Path(path))
        jobs = cached_jobs(path)
    except StoreError as exc:
        st.warning(f"The store cannot be read right now: {exc}")
        return
    if workers.empty:
        st.error(f"{NO_WORKER_TITLE} {NO_WORKER_HOW}", icon=":material/power_off:")
    else:
        for _, w in workers.iterrows():
            devices = format_devices(json.loads(w.devices))
            st.success(
                f"Worker alive · {w.slots} slot(s) on {devices} · last beat "
                f"{w.seconds_since_beat:.0f} s ago",
                icon=":material/bolt:",
            )
    queued = int((jobs["status"] == "queued").sum()) if len(jobs) else 0
    running = int((jobs["status"] == "running").sum()) if len(jobs) else 0
    st.metric("Jobs queued · running", f"{queued} · {running}")


RESULTS_TTL_S = 10  # a running study adds seeds; result pages re-read at most this often


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_studies(path: str, include_archived: bool = False) -> pd.DataFrame:
    """Every study (archived ones only if asked) with its status and run counts."""
    return store_runs.list_studies(include_archived=include_archived, path=path)


def forget(*keys: str) -> None:
    """Drop widget values that depend on the selected studies, so they reset to defaults.

    A method picked in one study may not exist (or be labelled differently) in another.
    """
    for key in keys:
        st.session_state.pop(key, None)


def _studies_with_selected_runs(path: str) -> pd.DataFrame:
    """Studies with at least one selected run, read through `cached_studies`; read again
    past the cache when it shows none, or not the study a Jobs link asks for: a study that
    finished within the cache's few seconds must not read as "no results yet"."""
    studies = cached_studies(path, include_archived=True)
    done = studies[studies["runs_selected"] > 0]
    request = st.session_state.get(REQUESTED_STUDY)
    if done.empty or (request is not None and request[0] not in set(done["study_id"])):
        cached_studies.clear()
        studies = cached_studies(path, include_archived=True)
        done = studies[studies["runs_selected"] > 0]
    return done.reset_index(drop=True)


def studies_with_results(
    path: str,
    empty_hint: str,
    *,
    archived_key: str | None = None,
    reset_keys: tuple[str, ...] = (),
) -> pd.DataFrame:
    """Studies with at least one selected run, newest first; stops the page when none.

    A store that cannot be read stops the page with the reason; ``empty_hint`` says what to
    do when no study has results yet. Archived studies are left out unless the "Show
    archived" toggle ``archived_key`` (drawn only when some study is archived) is on;
    flipping it forgets ``reset_keys`` (the picker's value may no longer be offered).
    """
    try:
        studies = _studies_with_selected_runs(path)
    except StoreError as exc:
        st.error(f"The store cannot be read right now: {exc}")
        st.stop()
    archived = studies["archived_at"].notna()
    show = (
        archived_key is not None
        and archived.any()
        and st.toggle(
            f"Show archived studies ({int(archived.sum())})",
            key=archived_key,
            help="Archived studies are kept in full, only hidden from the pickers.",
            on_change=forget,
            args=reset_keys,
        )
    )
    if not show:
        studies = studies[~archived].reset_index(drop=True)
    if studies.empty:
        st.info(empty_hint, icon=":material/hourglass_empty:")
        st.stop()
    return studies


# Set by the Jobs page's result links: (study_id, when); each picker applies it once.
REQUESTED_STUDY = "requested_study"


def request_study(study_id: str) -> None:
    """Make the next result page opened show this study (the Jobs page's result links)."""
    st.session_state[REQUESTED_STUDY] = (study_id, time.time())


def _requested(key: str, options: Iterable[str]) -> str | None:
    """The study the Jobs page asked for, the first time the picker ``key`` sees the request."""
    request = st.session_state.get(REQUESTED_STUDY)
    applied = f"_{key}_applied"
    if request is None or st.session_state.get(applied) == request:
        return None
    st.session_state[applied] = request
    return request[0] if request[0] in set(options) else None


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_study_card(path: str, study_id: str) -> tuple[dict[str, str], str]:
    """A study's card (`store.studies.study_card`) and its markdown notes; an imported
    study's card also says where and how it was run (its bundle's card, `_exports`)."""
    return (
        _exports.export_card(
            store_studies.study_card(study_id, path=path), imported_card(study_id, path=path)
        ),
        store_studies.get_study(study_id, path=path).notes or "",
    )


def show_study_card(path: str, study_id: str, *, key: str, notes: bool = True) -> None:
    """The "Study card" expander (who launched it, code, versions, devices) and its notes."""
    try:
        card, text = cached_study_card(path, study_id)
    except StoreError as exc:
        st.caption(f"The study card cannot be read right now: {exc}")
        return
    with st.expander("Study card", key=key):
        st.markdown("\n".join(f"- **{label}**: {value}" for label, value in card.items()))
    if notes and text.strip():
        st.markdown(text)


def picker_labels(studies: pd.DataFrame) -> dict[str, str]:
    """Study id -> the pickers' label; archived studies say so."""
    return {
        row["study_id"]: study_label(row)
        + (" · archived" if pd.notna(row.get("archived_at")) else "")
        for _, row in studies.iterrows()
    }


def pick_study(
    path: str, *, key: str, empty_hint: str, dependent_keys: tuple[str, ...]
) -> pd.Series:
    """A single-study picker (newest finished first); stops when no study has results."""
    studies = studies_with_results(
        path, empty_hint, archived_key=f"{key}_archived", reset_keys=(key, *dependent_keys)
    )
    labels = picker_labels(studies)
    ids = list(labels)
    initial = {"index": ids.index(compare.default_study_id(studies))}
    if requested := _requested(key, ids):
        forget(*dependent_keys)
        st.session_state[key] = requested
        initial = {}  # the widget takes the requested value from the session state
    chosen = st.selectbox(
        "Study",
        ids,
        format_func=labels.get,
        key=key,
        on_change=forget,
        args=dependent_keys,
        **initial,
    )
    show_study_card(path, chosen, key=f"{key}_card")
    return studies.set_index("study_id").loc[chosen]


def pick_studies(
    path: str, *, key: str, empty_hint: str, dependent_keys: tuple[str, ...]
) -> pd.DataFrame:
    """The result pages' study picker: studies with results, newest finished first.

    Stops the page with a plain message when there is nothing to pick. Studies on another
    dataset than the first picked are left out with a warning (their seeds test other
    images). Returns the picked studies' rows.
    """
    studies = studies_with_results(
        path, empty_hint, archived_key=f"{key}_archived", reset_keys=(key, *dependent_keys)
    )
    labels = picker_labels(studies)
    initial = {"default": [compare.default_study_id(studies)]}
    if requested := _requested(key, labels):
        forget(*dependent_keys)
        st.session_state[key] = [requested]
        initial = {}  # the widget takes the requested value from the session state
    chosen = st.multiselect(
        "Studies",
        options=list(labels),
        format_func=labels.get,
        key=key,
        help="Pick one study, or several run on the same dataset: a method run in more than "
        "one of them is shown once per study.",
        on_change=forget,
        args=dependent_keys,
        **initial,
    )
    if not chosen:
        st.info("Pick at least one study.")
        st.stop()
    for study_id in chosen:
        show_study_card(path, study_id, key=f"{key}_card_{study_id}")
    chosen, left_out = compare.one_dataset(studies, chosen)
    if left_out:
        st.warning(
            "Studies on different datasets cannot be compared seed by seed: their seeds test "
            f"different images. Left out: {', '.join(left_out)} (another dataset than the "
            "first study picked)."
        )
    return studies.set_index("study_id").loc[chosen].reset_index()


def show_test(
    title: str,
    result: stats.TestResult,
    table: pd.DataFrame | None = None,
    shortfall: str | None = None,
) -> None:
    """A test's heading, its one-line reading and its table, or why there is none.

    ``shortfall`` (too few seeds for the test to decide anything) replaces the numbers.
    """
    st.markdown(f"**{title}**")
    shown = result.table if table is None else table
    if shown.empty or shortfall:
        st.info(shortfall or result.note or result.reading, icon=":material/info:")
        return
    st.markdown(result.reading)
    st.dataframe(format_test_table(shown), hide_index=True, width="content")
    if result.note:
        st.caption(result.note)


@st.cache_data(max_entries=64, show_spinner=False)
def method_tests(
    scores: pd.DataFrame, correction: str
) -> tuple[stats.TestResult, stats.TestResult, stats.TestResult]:
    """Shapiro–Wilk per method, Kruskal–Wallis and pairwise Wilcoxon of one score per seed.

    Cached: statsmodels' Holm step runs a full garbage collection (~0.25 s), so each input is
    tested once, not on every rerun.
    """
    return (
        stats.shapiro_by_method(scores),
        stats.kruskal_across_methods(scores),
        stats.wilcoxon_pairwise(scores, correction=correction),
    )


def pick_correction(container: DeltaGenerator, *, key: str) -> str:
    """The pairwise tests' multiple-comparison correction (the result pages' one picker):
    Holm by default, the paper's unadjusted p-values one click away, statsmodels' others."""
    return container.selectbox(
        "Correction for the pairwise tests",
        options=list(CORRECTION_ORDER),
        format_func=correction_label,
        key=key,
        help="Holm holds the chance of any false difference among all pairs at 5 %; the "
        "paper reports its pairwise Wilcoxon p-values unadjusted, so with many pairs some fall "
        "below 0.05 by chance alone.",
    )


def show_method_tests(
    shapiro: stats.TestResult, kruskal: stats.TestResult, wilcoxon: stats.TestResult
) -> None:
    """The three tests of :func:`method_tests`, each with its reading (both result pages)."""
    show_test("Normality per method (Shapiro–Wilk)", shapiro)
    show_test("Do the methods differ at all? (Kruskal–Wallis)", kruskal)
    show_test(
        "Which pairs differ? (Wilcoxon signed-rank, paired by seed)",
        wilcoxon,
        shortfall=wilcoxon_seed_shortfall(wilcoxon.table),
    )


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_group_counts(path: str, study_ids: tuple[str, ...]) -> pd.DataFrame:
    """Stored runs per (study, task, method, seed)."""
    return store_runs.run_group_counts(list(study_ids), path=path)


def read_finished(
    path: str, picked: pd.DataFrame, read: Callable[..., tuple[pd.DataFrame, ...]]
) -> tuple[list[compare.StudyProgress], pd.DataFrame, tuple[pd.DataFrame, ...]]:
    """What a result page shows of the picked studies: their finished seeds only.

    Stops the page with the reason when the store cannot be read, and warns once per study
    that is still running or stopped early (see :func:`warn_partial`).

    Args:
        path: the store.
        picked: rows of :func:`pick_studies`.
        read: a cached reader called as ``read(path, study_ids, study_names)`` that returns
            frames with ``study_id`` and ``seed`` columns.

    Returns:
        ``(progress per study, stored runs per group, read's frames cut to finished seeds)``.
    """
    chosen = tuple(picked["study_id"])
    try:
        group_counts = cached_group_counts(path, chosen)
        frames = read(path, chosen, tuple(picked["name"].astype(str)))
    except StoreError as exc:
        st.error(f"The store cannot be read right now: {exc}")
        st.stop()
    progress = compare.study_progress(picked, group_counts)
    warn_partial(progress)
    return progress, group_counts, tuple(compare.keep_finished_seeds(f, progress) for f in frames)


def pick_methods(container: DeltaGenerator, methods: list[str], *, key: str) -> list[str]:
    """The result pages' Methods picker: every method present, in the paper's order."""
    return container.multiselect(
        "Methods", options=methods, default=methods, format_func=method_title, key=key
    )


def pick_option(
    label: str, choices: Mapping[str, str], *, key: str, container: DeltaGenerator | None = None
) -> str:
    """A row of radio buttons in ``container`` (default: the page); ``choices`` maps each
    value to the text shown for it."""
    return (container or st).radio(
        label, options=list(choices), format_func=choices.get, horizontal=True, key=key
    )


def warn_partial(progress: list[compare.StudyProgress]) -> None:
    """Say, per study still running, that its figures use only its finished seeds."""
    for item in progress:
        if message := progress_message(item):
            st.warning(message, icon=":material/hourglass_top:")


@st.cache_data(max_entries=64, show_spinner=False)
def chart_spec(name: str, data: pd.DataFrame, options: dict[str, Any]) -> dict[str, Any]:
    """The Vega-Lite spec of ``pages._charts.<name>(data, **options)``, cached.

    Altair validates every spec against its JSON schema (~50 ms a chart); caching the spec
    keeps reruns of an unchanged chart (any other widget touched) fast.
    """
    # Imported here: Altair takes a while to load and only the result pages draw charts.
    from pages import _charts

    return getattr(_charts, name)(data, **options).to_dict()


def download(container: DeltaGenerator, label: str, data: str, file_name: str, *, key: str) -> None:
    """A download button for a CSV or LaTeX export in ``container`` (a column)."""
    container.download_button(
        label,
        data,
        file_name=file_name,
        mime=DOWNLOAD_TYPES[Path(file_name).suffix],
        key=key,
        icon=":material/download:",
    )


REFERENCE_BUTTON = "Load the reference study (20 seeds of the paper protocol on the phantom)"


def offer_reference_study(path: str) -> None:
    """On a store with no study results, a one-click import of the bundled reference study
    (``examples/reference-study.zip``); the page reruns showing it."""
    try:
        if (cached_studies(path)["runs_selected"] > 0).any():
            return
    except StoreError:
        return  # studies_with_results says why the store cannot be read
    from store.bundle import REFERENCE_STUDY, import_study

    if not REFERENCE_STUDY.is_file():
        return
    st.caption(
        "The bundled reference study shows the paper's full analysis on the phantom at "
        "once; your own studies appear beside it once run."
    )
    if st.button(REFERENCE_BUTTON, key="load_reference_study", icon=":material/download:"):
        try:
            import_study(REFERENCE_STUDY, path=path)
        except StoreError as exc:
            st.error(f"The reference study could not be loaded: {exc}")
            return
        cached_studies.clear()
        st.rerun()


@st.cache_data(ttl=RESULTS_TTL_S, show_spinner=False)
def cached_cards(path: str, study_ids: tuple[str, ...]) -> tuple[_exports.Card, ...]:
    """The picked studies' cards that head every download (``_exports.export_cards``)."""
    return _exports.export_cards(path, study_ids)


def download_row(files: list[tuple[str, str, str, str]], cards: tuple[_exports.Card, ...]) -> None:
    """One column per export ``(label, text, file name, key)``, each headed by the cards."""
    for column, (label, text, name, key) in zip(st.columns(len(files)), files, strict=True):
        download(column, label, _exports.headed(text, cards, name), name, key=key)
