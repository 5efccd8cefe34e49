"""The result pages' study pickers: studies with results, the Jobs page's request for one,
the study card, the methods and option pickers, reading the finished seeds, and the
one-click reference study on an empty store."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping

import pandas as pd
import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from engine.analysis import compare
from jobs.services.page_store import (
    StoreError,
    get_study,
    imported_card,
    reference_study_id,
    study_card,
)
from pages.present import exports
from pages.present.job_view import page_shows
from pages.present.tables import (
    method_title,
    progress_message,
    study_label,
    unknown_methods,
    unknown_methods_note,
)
from pages.present.user_text import notes as user_notes
from pages.present.user_text import plain, plain_list, said
from pages.widgets import view_state
from pages.widgets.reads import (
    RESULTS_TTL_S,
    cached_group_counts,
    cached_studies,
    cached_study_methods,
    forget_studies,
)


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
        forget_studies()
        studies = cached_studies(path, include_archived=True)
        done = studies[studies["runs_selected"] > 0]
    return done.reset_index(drop=True)


def studies_with_results(
    path: str,
    empty_hint: str,
    *,
    archived_key: str | None = None,
    reset_keys: tuple[str, ...] = (),
    link_key: str | None = None,
) -> pd.DataFrame:
    """Studies with at least one selected run, newest first; stops the page when none.

    The picker ``link_key`` of a page that cannot show every study (`PAGE_OF_PICKER`)
    leaves those out (`pages.present.job_view.page_shows`: KL × CPPD needs both tasks,
    Attention trained models), saying how many and why.

    A store that cannot be read stops the page with the reason; ``empty_hint`` says what to
    do when no study has results yet. Archived studies are left out unless the "Show
    archived" toggle ``archived_key`` (drawn only when some study is archived) is on;
    flipping it forgets ``reset_keys`` (the picker's value may no longer be offered). A link
    naming studies in the picker ``link_key`` turns the toggle on for an archived one and
    says which of them cannot be shown (:func:`explain_linked_studies`).
    """
    try:
        studies = _studies_with_selected_runs(path)
    except StoreError as exc:
        st.error(f"The store cannot be read right now: {said(exc)}")
        st.stop()
    archived = studies["archived_at"].notna()
    if link_key is not None and archived_key is not None:
        explain_linked_studies(path, studies, link_key=link_key, archived_key=archived_key)
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
    page = PAGE_OF_PICKER.get(link_key or "")
    if page is not None and not studies.empty:
        shown = studies["spec"].map(lambda spec: page_shows(page, spec))
        if not shown.all():
            left_out = NOT_OFFERED[page].format(n=int((~shown).sum()))
            studies = studies[shown].reset_index(drop=True)
            if studies.empty:  # say why, not "no study has results yet"
                st.info(left_out, icon=":material/info:")
                st.stop()
            st.caption(left_out)
    if studies.empty:
        st.info(empty_hint, icon=":material/hourglass_empty:")
        st.stop()
    return studies


#: The pages whose study picker (by its key) offers only the studies they can show, and
#: what each says of the ones left out (issue 39: KL × CPPD and Attention opened on a study
#: they could not show).
PAGE_OF_PICKER = {"rel_studies": "pages/relationship.py", "att_study": "pages/attention.py"}
NOT_OFFERED = {
    "pages/relationship.py": "{n} study(ies) graded only one task are not offered here: the "
    "KL × CPPD tables need a study with both KL and CPPD.",
    "pages/attention.py": "{n} study(ies) of imported results are not offered here: they hold "
    "no trained model to draw maps from.",
}


def explain_linked_studies(
    path: str, with_results: pd.DataFrame, *, link_key: str, archived_key: str
) -> None:
    """What a link's study ids (URL parameter ``link_key``) find, said once per link.

    An archived study is shown (the "Show archived" toggle turns on, with a note); an id this
    store does not hold (deleted, or a link from another server) or a study with no finished
    run yet gets one warning naming it and what to do.
    """
    linked = view_state.pending(link_key)
    if not linked:
        return
    offered = set(with_results["study_id"])
    archived = set(with_results.loc[with_results["archived_at"].notna(), "study_id"])
    if linked_archived := [s for s in linked if s in archived]:
        st.session_state[archived_key] = True
        st.info(
            f"This link names archived study {plain_list(linked_archived)}: archived studies "
            "are shown. An archived study is kept in full, only hidden from the pickers.",
            icon=":material/archive:",
        )
    missing = [s for s in linked if s not in offered]
    if not missing:
        return
    known = set(cached_studies(path, include_archived=True)["study_id"])
    not_run = [s for s in missing if s in known]
    gone = [s for s in missing if s not in known]
    if gone:
        st.warning(
            f"This link names study {plain_list(gone)}, which this store does not hold: it was "
            "deleted, or the link comes from another SoftGrade server. Pick a study below.",
            icon=":material/link_off:",
        )
    if not_run:
        st.warning(
            f"This link names study {plain_list(not_run)}, which has no finished run yet: its "
            "results appear here once its first seed is done. Pick a study below.",
            icon=":material/hourglass_top:",
        )


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
    study's card also says where and how it was run (its bundle's card, `pages.present.exports`)."""
    return (
        exports.export_card(study_card(study_id, path=path), imported_card(study_id, path=path)),
        get_study(study_id, path=path).notes or "",
    )


def show_study_card(path: str, study_id: str, *, key: str, notes: bool = True) -> None:
    """The "Study card" expander (who launched it, code, versions, devices) and its notes."""
    try:
        card, text = cached_study_card(path, study_id)
    except StoreError as exc:
        st.caption(f"The study card cannot be read right now: {said(exc)}")
        return
    lines = [f"- **{label}**: {plain(value)}" for label, value in card.items()]
    if unknown := stored_unknown_methods(path, (study_id,)):
        lines.append(f"- **Methods unknown here**: {unknown_methods_note(unknown)}")
    # Named by its study: two studies picked gave two expanders both called "Study card".
    with st.expander(study_card_title(card, study_id), key=key):
        st.markdown("\n".join(lines))
    if notes and text.strip():
        st.markdown(user_notes(text))


def study_card_title(card: dict[str, str], study_id: str) -> str:
    """ "Study card · knees-2024": the expander's title, naming its study (as text)."""
    return f"Study card · {plain(card.get('study') or study_id)}"


def stored_unknown_methods(path: str, study_ids: tuple[str, ...]) -> list[str]:
    """The studies' stored methods this checkout does not register (none when the store
    cannot be read now: the pages say so elsewhere)."""
    try:
        return unknown_methods(cached_study_methods(path, study_ids))
    except StoreError:
        return []


def note_unknown_methods(path: str, study_ids: Iterable[str]) -> None:
    """A note naming the studies' methods this checkout does not know, if any."""
    if unknown := stored_unknown_methods(path, tuple(study_ids)):
        st.info(unknown_methods_note(unknown), icon=":material/extension:")


def picker_labels(studies: pd.DataFrame) -> dict[str, str]:
    """Study id -> the pickers' label; archived studies say so."""
    reference = reference_study_id()
    return {
        row["study_id"]: study_label(row, reference)
        + (" · archived" if pd.notna(row.get("archived_at")) else "")
        for _, row in studies.iterrows()
    }


# Per study picker: the studies it showed in this session's last run (id -> name), so that
# when one leaves the store or the picker (an admin deleted or archived it) the page says
# which and why, rather than switching to another study without a word.
_SHOWN_PREFIX = "_shown_studies_"


def explain_vanished_studies(
    path: str, offered: pd.DataFrame, *, key: str, dependent_keys: tuple[str, ...]
) -> None:
    """Say which studies this picker showed that it can no longer offer, and why.

    A study deleted since the last run gets a warning naming it; one archived by someone
    else says how to show it again. The picker then opens on its default, so the widgets
    that depended on the study are reset.
    """
    shown: dict[str, str] = st.session_state.get(_SHOWN_PREFIX + key) or {}
    gone = [study_id for study_id in shown if study_id not in set(offered["study_id"])]
    if not gone:
        return
    st.session_state.pop(_SHOWN_PREFIX + key, None)
    forget(*dependent_keys)
    current = st.session_state.get(key)
    if isinstance(current, list) and (kept := [s for s in current if s not in gone]):
        st.session_state[key] = kept  # the other studies picked stay
    else:
        forget(key)  # the picker opens on its default
    try:
        forget_studies()  # the few-seconds cache may still hold a deleted study
        known = cached_studies(path, include_archived=True).set_index("study_id")
    except StoreError:
        known = pd.DataFrame(columns=["archived_at"])
    for study_id in gone:
        name = f"“{plain(shown[study_id])}” ({study_id})"
        if study_id in known.index and pd.notna(known.loc[study_id, "archived_at"]):
            st.info(
                f"The study you were viewing, {name}, was archived, so it is hidden from the "
                "picker: turn on “Show archived studies” to see it again.",
                icon=":material/archive:",
            )
        elif study_id in known.index:
            st.info(
                f"The study you were viewing, {name}, has no results to show any more.",
                icon=":material/info:",
            )
        else:
            st.warning(
                f"The study you were viewing, {name}, was deleted from the store, so this "
                "page now shows another study. Deleting a study cannot be undone; ask an "
                "admin if it was needed.",
                icon=":material/delete:",
            )


def remember_shown_studies(studies: pd.DataFrame, chosen: Iterable[str], *, key: str) -> None:
    """Keep the ids and names of the studies the picker ``key`` shows (see above)."""
    names = studies.set_index("study_id")["name"]
    st.session_state[_SHOWN_PREFIX + key] = {s: str(names.get(s, s)) for s in chosen}


def _pickable_studies(
    path: str, *, key: str, empty_hint: str, dependent_keys: tuple[str, ...]
) -> tuple[pd.DataFrame, dict[str, str]]:
    """The preamble of both study pickers: the studies with results (stops the page when there
    are none), a note on linked studies that vanished, and each study's label by id."""
    studies = studies_with_results(
        path,
        empty_hint,
        archived_key=f"{key}_archived",
        reset_keys=(key, _SHOWN_PREFIX + key, *dependent_keys),  # hiding archived: no note
        link_key=key,
    )
    explain_vanished_studies(path, studies, key=key, dependent_keys=dependent_keys)
    return studies, picker_labels(studies)


def pick_study(
    path: str, *, key: str, empty_hint: str, dependent_keys: tuple[str, ...], card: bool = True
) -> pd.Series:
    """A single-study picker (newest finished first); stops when no study has results.

    ``card=False`` leaves the study card out (Grade a film shows it to presenters only)."""
    studies, labels = _pickable_studies(
        path, key=key, empty_hint=empty_hint, dependent_keys=dependent_keys
    )
    ids = list(labels)
    initial = {"index": ids.index(compare.default_study_id(studies))}
    if requested := _requested(key, ids):
        forget(*dependent_keys)
        st.session_state[key] = requested
        initial = {}  # the widget takes the requested value from the session state
    chosen = view_state.linked(
        st.selectbox,
        "Study",
        ids,
        key=key,
        what="study",
        initial=initial,
        warn=False,  # explain_linked_studies said why
        format_func=labels.get,
        on_change=forget,
        args=dependent_keys,
    )
    remember_shown_studies(studies, [chosen], key=key)
    if card:
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
    studies, labels = _pickable_studies(
        path, key=key, empty_hint=empty_hint, dependent_keys=dependent_keys
    )
    initial = {"default": [compare.default_study_id(studies)]}
    if requested := _requested(key, labels):
        forget(*dependent_keys)
        st.session_state[key] = [requested]
        initial = {}  # the widget takes the requested value from the session state
    chosen = view_state.linked(
        st.multiselect,
        "Studies",
        list(labels),
        key=key,
        what="study",
        multi=True,
        initial=initial,
        warn=False,  # explain_linked_studies said why
        format_func=labels.get,
        help="Pick one study, or several run on the same dataset: a method run in more than "
        "one of them is shown once per study.",
        on_change=forget,
        args=dependent_keys,
    )
    remember_shown_studies(studies, chosen, key=key)
    if not chosen:
        st.info("Pick at least one study.")
        st.stop()
    for study_id in chosen:
        show_study_card(path, study_id, key=f"{key}_card_{study_id}")
    chosen, left_out = compare.one_dataset(studies, chosen)
    if left_out:
        st.warning(
            "Studies on different datasets cannot be compared seed by seed: their seeds test "
            f"different images. Left out: {plain_list(left_out)} (another dataset than the "
            "first study picked)."
        )
    return studies.set_index("study_id").loc[chosen].reset_index()


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
        st.error(f"The store cannot be read right now: {said(exc)}")
        st.stop()
    progress = compare.study_progress(picked, group_counts)
    warn_partial(progress)
    return progress, group_counts, tuple(compare.keep_finished_seeds(f, progress) for f in frames)


def pick_methods(container: DeltaGenerator, methods: list[str], *, key: str) -> list[str]:
    """The result pages' Methods picker: every method present, in display order; kept in
    the URL. Its chips wrap onto more rows, so fourteen methods all show whole (in a column
    Streamlit otherwise keeps one scrolling row that hides all but the first few)."""
    return view_state.linked(
        container.multiselect,
        "Methods",
        methods,
        key=key,
        what="method",
        multi=True,
        initial={"default": methods},
        format_func=method_title,
        wrap=True,
    )


def pick_option(
    label: str, choices: Mapping[str, str], *, key: str, container: DeltaGenerator | None = None
) -> str:
    """A row of radio buttons in ``container`` (default: the page); ``choices`` maps each
    value to the text shown for it; kept in the URL."""
    return view_state.linked(
        (container or st).radio,
        label,
        list(choices),
        key=key,
        what=label.lower(),
        format_func=choices.get,
        horizontal=True,
    )


def warn_partial(progress: list[compare.StudyProgress]) -> None:
    """Say, per study still running, that its figures use only its finished seeds."""
    for item in progress:
        if message := progress_message(item):
            st.warning(message, icon=":material/hourglass_top:")


REFERENCE_LOADED_KEY = "_reference_loaded"
REFERENCE_LOADED = "The bundled reference study is loaded and shown below."
REFERENCE_BUTTON = "Load the reference study (20 seeds of the paper protocol on the phantom)"


def offer_reference_study(path: str) -> None:
    """The bundled reference study (``store/examples/reference-study.zip``) in one click, for
    whoever may import (members and admins; a viewer is told who can), while the store does
    not hold it: up front on a store with no study results, else folded away under the
    picker, so a lab that ran its own study first can still read it beside the reference.
    The page reruns showing it. `jobs.services.lab.load_reference_study` checks the role
    again, so the button is not the only guard."""
    if loaded := st.session_state.pop(REFERENCE_LOADED_KEY, None):
        st.success(loaded, icon=":material/check_circle:")
    try:
        studies = cached_studies(path, include_archived=True)
    except StoreError:
        return  # studies_with_results says why the store cannot be read
    from jobs.services.page_store import REFERENCE_STUDY

    if not REFERENCE_STUDY.is_file() or reference_study_id() in set(studies["study_id"]):
        return
    if (studies["runs_selected"] > 0).any():
        with st.expander("Compare with the bundled reference study", icon=":material/download:"):
            reference_offer(path, first=False)
        return
    reference_offer(path, first=True)


def reference_offer(path: str, *, first: bool) -> None:
    """The reference study's load button with what it is (who may load it, for a viewer)."""
    from jobs.services import lab
    from jobs.services.access import AccessDenied, Action, can
    from pages.widgets.sign_in import current_account

    account = current_account()
    if account is None or not can(account, Action.IMPORT):
        st.caption(
            "A member or an admin can load the bundled reference study here (the paper's "
            "full analysis on the phantom)."
        )
        return
    st.caption(
        "The bundled reference study shows the paper's full analysis on the phantom at "
        "once; your own studies appear beside it once run."
        if first
        else "The bundled reference study (the paper's full analysis on the phantom) is not "
        "in this store yet: load it to read your studies beside it."
    )
    if st.button(REFERENCE_BUTTON, key="load_reference_study", icon=":material/download:"):
        try:
            lab.load_reference_study(account, path=path)
        except (StoreError, AccessDenied) as exc:
            st.error(f"The reference study could not be loaded: {said(exc)}")
            return
        forget_studies()
        # Say it was loaded and show it (issue 39: no confirmation, and the picker kept the
        # study it had): the pickers take it as the Jobs page's links ask for a study.
        if (loaded := reference_study_id()) is not None:
            request_study(loaded)
        st.session_state[REFERENCE_LOADED_KEY] = REFERENCE_LOADED
        st.rerun()
