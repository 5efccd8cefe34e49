"""A result page's view in its URL: every picker's value kept in ``st.query_params`` so that a
link opens exactly that view (issue 22).

Each picker is drawn through :func:`linked`: the widget opens on the link's value when the URL
carries one the page has not applied yet (a valid one; an invalid one gets one message naming
what was asked and what is offered), and every value the widget ends up with is written back
to the URL. A URL parameter is named by the widget's key, which Streamlit already keeps unique
on a page (``?compare_studies=ID&compare_tasks=KL&compare_tab=Statistics``). Studies go in by
id, never by a path. :func:`share_link` draws the "Copy link to this view" control.

The session, not the URL, holds the view once a link is applied (issue 31). Each rerun starts
from the query string the browser sent with the click, and a click made while the last rerun's
URL was still on its way carries the old one: changing Seed, then the overlay 0.3 s later,
put the old seed back in the address bar and, on the next rerun, back in the picker. So this
module keeps, per page visit, the view the session shows (every linked key's values) and
every value it ever wrote: a URL value this session wrote before is an echo, not a link, and
every write re-asserts the whole view. Only a page opened afresh (a new session or another
page) or the browser's back and forward buttons apply what the URL says. A linked widget
inside an ``st.fragment`` reruns the whole page when changed, so that the link control
outside the fragment follows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from pages.present.user_text import plain, plain_list

# The session's view of the page it shows: see `_View`.
_VIEW_KEY = "_link_view"


@dataclass
class _View:
    """The linked values of one page visit.

    ``shown``: per widget key, the URL values last applied from or written to the URL (so that
    a link's value is applied once, and a person's change is not overwritten by it).
    ``written``: per key, every value this visit wrote, to tell a stale echo from a new link.
    """

    page: str
    shown: dict[str, list[str]] = field(default_factory=dict)
    written: dict[str, set[tuple[str, ...]]] = field(default_factory=dict)


def _page_and_history() -> tuple[str, bool]:
    """This run's page (its script hash) and whether the browser's back or forward button
    started it (then the URL is the view asked for)."""
    ctx = get_script_run_ctx()
    if ctx is None:
        return "", False
    return str(ctx.page_script_hash), bool(getattr(ctx, "is_history_navigation", False))


def _view() -> _View:
    """This page visit's view; a new one when the page changed since the last run."""
    page, _ = _page_and_history()
    view = st.session_state.get(_VIEW_KEY)
    if not isinstance(view, _View) or view.page != page:
        view = _View(page=page)
        st.session_state[_VIEW_KEY] = view
    return view


def _as_values(value: Any) -> list[str]:
    """A widget's value as URL values (a list as a repeated parameter, None as none)."""
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]


def asked(param: str) -> list[str]:
    """The values the URL gives ``param`` (several for a multi-select), or none."""
    return st.query_params.get_all(param)


def _is_echo(view: _View, key: str, values: list[str]) -> bool:
    """Whether the URL's ``values`` for ``key`` are ones this visit wrote earlier: the query
    string of a click sent before the browser had the last rerun's URL (not a back or forward
    step, which asks for an earlier view on purpose)."""
    _, history = _page_and_history()
    return not history and tuple(values) in view.written.get(key, set())


def pending(key: str) -> list[str] | None:
    """The link's values for ``key`` when this session has not applied them yet, else None."""
    values = asked(key)
    view = _view()
    if not values or view.shown.get(key) == values or _is_echo(view, key, values):
        return None
    return values


def apply_link(
    key: str, options: Iterable[Any], *, what: str, multi: bool = False, warn: bool = True
) -> bool:
    """Set the widget ``key`` to the link's value, once, when it is one of ``options``.

    Values the page does not offer get one warning naming them and what is offered (unless
    ``warn`` is off: the caller said it already). Returns whether the widget's value was set
    (the caller then passes no default of its own, which Streamlit would otherwise warn about).
    """
    values = pending(key)
    if values is None:
        return False
    _view().shown[key] = values
    by_text = {str(option): option for option in options}
    kept = [by_text[v] for v in values if v in by_text]
    unknown = [v for v in values if v not in by_text]
    if unknown and warn:
        # The values come from whoever wrote the link: shown as text, never as markdown.
        st.warning(
            f"This link asks for {plain(what)} {plain_list(repr(v) for v in unknown)}, which "
            f"this view does not offer. Available: {plain_list(by_text) or 'none'}.",
            icon=":material/link_off:",
        )
    if not kept:
        return False
    st.session_state[key] = kept if multi else kept[0]
    return True


def keep_in_link(key: str, value: Any) -> None:
    """Write the widget's value to the URL (a list as a repeated parameter), and put back
    any other value of this view that a stale query string took out of it."""
    view = _view()
    values = _as_values(value)
    view.shown[key] = values
    view.written.setdefault(key, set()).add(tuple(values))
    for other, shown in view.shown.items():
        now = asked(other)
        if now != shown and (other == key or not now or _is_echo(view, other, now)):
            st.query_params[other] = shown


def linked(
    widget: Callable[..., Any],
    label: str,
    options: Sequence[Any],
    *,
    key: str,
    what: str,
    multi: bool = False,
    initial: dict[str, Any] | None = None,
    warn: bool = True,
    **kwargs: Any,
) -> Any:
    """Draw ``widget(label, options, key=key, **initial, **kwargs)`` with its value in the URL.

    Args:
        widget: ``st.selectbox``, ``st.multiselect``, ``st.radio`` or a container's.
        label: The widget's label.
        options: What it offers.
        key: Its key, also the URL parameter's name.
        what: What a value is, for the message about a value not offered ("task").
        multi: Whether the widget holds a list.
        initial: ``index``/``default`` when the link gives none.
        warn: Whether to warn about a linked value not offered (off where the caller says
            more, as the study pickers do).
        **kwargs: Passed on (``format_func``, ``help``, ``on_change`` ...).
    """
    from_link = apply_link(key, options, what=what, multi=multi, warn=warn)
    if _inside_fragment():
        kwargs = _rerun_page_on_change(kwargs)
    value = widget(label, options, key=key, **({} if from_link else initial or {}), **kwargs)
    keep_in_link(key, value)
    return value


def _inside_fragment() -> bool:
    """Whether the widget about to be drawn lives in an ``st.fragment``.

    Streamlit has no public call for this; its per-run state names the fragment being run.
    Should that ever move, widgets are treated as outside one (their link still follows on
    the page's next full rerun).
    """
    try:
        from streamlit.runtime.scriptrunner_utils.script_run_context import ThreadState

        return ThreadState.get().fragment_id is not None
    except (ImportError, RuntimeError, AttributeError):
        return False


def _rerun_page_on_change(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` with an ``on_change`` that runs the caller's own callback, then reruns the
    whole page: a change inside a fragment would otherwise rerun the fragment alone, and the
    "Copy link to this view" control outside it would keep offering the old view."""
    own = (
        kwargs.pop("on_change", None),
        kwargs.pop("args", None) or (),
        kwargs.pop("kwargs", None) or {},
    )
    return {**kwargs, "on_change": _then_rerun_page, "args": own}


def _then_rerun_page(
    callback: Callable[..., Any] | None, args: Sequence[Any], kwargs: dict[str, Any]
) -> None:
    """The caller's ``on_change`` (if any), then a full rerun of the page (Streamlit turns a
    callback's ``st.rerun()`` into a page rerun in place of the fragment's)."""
    if callback is not None:
        callback(*args, **kwargs)
    st.rerun()


def linked_tabs(labels: Sequence[str], *, key: str) -> Sequence[Any]:
    """``st.tabs`` whose open tab is in the URL (``?compare_tab=Statistics``).

    Each change reruns the page (so a tab's ``.open`` says whether to compute it). Not
    Streamlit's own ``bind="query-params"``: a parameter bound that way makes
    ``st.switch_page`` (sign-out's) fail, and it drops a wrong value without a word.
    """
    apply_link(key, labels, what="tab")
    tabs = st.tabs(labels, key=key, on_change="rerun")
    keep_in_link(key, st.session_state.get(key) or labels[0])
    return tabs


def view_url() -> str:
    """The full URL of this view: the browser's origin and page, and the query parameters.

    Only the page's path and the pickers' values go in: never a server path. Each linked
    widget's value is its current one, also where the control is drawn before the widget.
    """
    try:
        page = urlsplit(str(st.context.url or ""))
    except Exception:
        page = urlsplit("")
    base = f"{page.scheme}://{page.netloc}{page.path}" if page.netloc else page.path or "/"
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    for key, shown in _view().shown.items():
        value = st.session_state.get(key)
        params[key] = shown if value is None else _as_values(value)
    query = urlencode([(k, v) for k, values in params.items() for v in values], doseq=True)
    return f"{base}?{query}" if query else base


def link_slot() -> Any:
    """The place of a page's "Copy link to this view" drawn before the page's sections: an
    ``st.empty``, which each :func:`share_link` into it replaces."""
    return st.empty()


def share_link(slot: Any = None) -> None:
    """The "Copy link to this view" control: the view's URL with a copy button (``st.code``).

    Draw it after every picker wrote its value to the URL; in a :func:`link_slot` drawn
    above the page's sections, draw it twice: once right after the pickers, so the control
    already offers this run's view while the slow sections below are drawn (issue 39: under
    load the previous run's link stayed there until the run ended, "nominal / seed 0" for
    "Beta / seed 3"), and once at the end, with the values of the sections' own pickers.
    """
    place = slot.container() if slot is not None else st
    with place.popover("Copy link to this view", icon=":material/link:"):
        st.code(view_url(), language=None, wrap_lines=True)
        st.caption(
            "Whoever opens it sees this view after signing in (with a role that may open "
            "this page). Studies are named by id."
        )
