"""The kiosk: SoftGrade serving only Grade a film, for clinicians and visitors.

``python -m jobs up --kiosk --study ID [--method M]`` (on the lab's store) and ``python -m
jobs up --demo demo.zip`` (on a demo bundle, `jobs.services.demo_bundle`) start the app with these
settings in its environment. ``app.py`` then lists one page and no menu, and the page shows
the study and method fixed here instead of its pickers.

A kiosk needs no sign-in, even beyond loopback: it can only grade films (no launch, no
import, no other page, no account), so nothing it exposes needs a role. See docs/security.md.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KIOSK_ENV = "SOFTGRADE_KIOSK"
KIOSK_STUDY_ENV = "SOFTGRADE_KIOSK_STUDY"
KIOSK_METHOD_ENV = "SOFTGRADE_KIOSK_METHOD"
DEMO_DIR_ENV = "SOFTGRADE_DEMO_DIR"


@dataclass(frozen=True)
class KioskSettings:
    """What the person who started the kiosk fixed.

    Attributes:
        study_id: The lab store's study whose models grade (None with a demo bundle).
        method: The method whose models grade; None takes the best on validation.
        demo_dir: An unpacked demo bundle to grade with instead of the store.
    """

    study_id: str | None = None
    method: str | None = None
    demo_dir: Path | None = None

    def env(self) -> dict[str, str]:
        """The environment the app's process gets (`kiosk_settings` reads it back)."""
        out = {KIOSK_ENV: "1"}
        if self.study_id:
            out[KIOSK_STUDY_ENV] = self.study_id
        if self.method:
            out[KIOSK_METHOD_ENV] = self.method
        if self.demo_dir is not None:
            out[DEMO_DIR_ENV] = str(self.demo_dir)
        return out


def kiosk_settings(env: Mapping[str, str] | None = None) -> KioskSettings | None:
    """The kiosk's settings when the app was started as a kiosk, else None."""
    env = os.environ if env is None else env
    if env.get(KIOSK_ENV) != "1":
        return None
    demo_dir = env.get(DEMO_DIR_ENV)
    return KioskSettings(
        study_id=env.get(KIOSK_STUDY_ENV) or None,
        method=env.get(KIOSK_METHOD_ENV) or None,
        demo_dir=Path(demo_dir) if demo_dir else None,
    )


def check_kiosk_study(
    study_id: str, method: str | None, *, path: Path | str | None = None
) -> tuple[str, str]:
    """The study's name and the method the kiosk grades with (the best on validation when
    ``method`` is None), checked before the app starts.

    Raises:
        ValueError: No such study, no finished runs, no runs of ``method`` (the message
            lists the methods it has), or none of the method's models on this machine (an
            imported study, such as the bundled reference, ships its results, not its models:
            a kiosk on it could only say so to every visitor).
    """
    from engine.demo_models import default_method
    from store import runs as store_runs
    from store import studies as store_studies

    study = store_studies.get_study(study_id, path=path)
    runs = store_runs.list_runs([study_id], selected_only=True, path=path)
    if runs.empty:
        raise ValueError(f"study {study_id} ({study.name}) has no finished runs to grade with")
    methods = sorted(set(runs["method"]))
    if method is not None and method not in methods:
        raise ValueError(
            f"study {study_id} has no finished runs of {method!r}; it has {', '.join(methods)}"
        )
    method = method or default_method(runs)
    if not _has_weights(runs[runs["method"] == method]):
        raise ValueError(
            f"study {study_id} ({study.name}) has no trained {method!r} models on this machine "
            "(an imported study, such as the bundled reference, ships its results, not its "
            "models): serve a study trained here, or a demo bundle (`up --demo demo.zip`, "
            "written by `export-demo` where the study was trained)"
        )
    return study.name, method


def _has_weights(runs: Any) -> bool:
    """Whether any of these selected runs (a `store.runs.list_runs` frame) has its checkpoint
    file on this machine."""
    paths = runs.get("checkpoint_path", [])
    return any(isinstance(p, str) and Path(p).is_file() for p in paths)
