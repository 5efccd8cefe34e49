"""A result page's view in its URL: every picker's value kept in ``st.query_params`` so that a
link opens exactly that view (issue 22).

Each picker is drawn through :func:`linked`: the widget opens on the link's value when the URL
carries one the page has not applied yet (a valid one; an invalid one gets one message naming
what was asked and what is offered), and every value the widget ends up with is written back
to the URL. A URL parameter is named by the widget's key, which Streamlit already keeps unique
on a page (``?compare_studies=ID&compare_tasks=KL&compare_tab=Statistics``). Studies go in by
id, never by a path. :func:`share_link` draws the "Copy link to this view" control.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlencode, urlsplit

import streamlit as st

from pages.present.user_text import plain, plain_list

# Per widget key: the URL values last applied from or written to the URL, so that the link's
# value is applied once, and a person's change (the URL still holds the old value when the
# script reruns) is not overwritten by it.
_SEEN_PREFIX = "_link_seen_"


def asked(param: str) -> list[str]:
    """The values the URL gives ``param`` (several for a multi-select), or none."""
    return st.query_params.get_all(param)


def pending(key: str) -> list[str] | None:
    """The link's values for ``key`` when this session has not applied them yet, else None."""
    values = asked(key)
    if not values or st.session_state.get(_SEEN_PREFIX + key) == values:
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
    st.session_state[_SEEN_PREFIX + key] = values
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
    """Write the widget's value to the URL (a list as a repeated parameter)."""
    if value is None:
        values: list[str] = []
    else:
        values = [str(v) for v in value] if isinstance(value, list | tuple) else [str(value)]
    st.session_state[_SEEN_PREFIX + key] = values
    if asked(key) != values:
        st.query_params[key] = values


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
    value = widget(label, options, key=key, **({} if from_link else initial or {}), **kwargs)
    keep_in_link(key, value)
    return value


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

    Only the page's path and the pickers' values go in: never a server path.
    """
    try:
        page = urlsplit(str(st.context.url or ""))
    except Exception:
        page = urlsplit("")
    base = f"{page.scheme}://{page.netloc}{page.path}" if page.netloc else page.path or "/"
    query = urlencode(
        [(k, v) for k in st.query_params for v in st.query_params.get_all(k)], doseq=True
    )
    return f"{base}?{query}" if query else base


def share_link(container: Any = None) -> None:
    """The "Copy link to this view" control: the view's URL with a copy button (``st.code``).

    Draw it last on a page, after every picker wrote its value to the URL.
    """
    with (container or st).popover("Copy link to this view", icon=":material/link:"):
        st.code(view_url(), language=None, wrap_lines=True)
        st.caption(
            "Whoever opens it sees this view after signing in (with a role that may open "
            "this page). Studies are named by id."
        )
