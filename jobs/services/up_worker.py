"""Whether a worker is on its way: `python -m jobs up` starts its first worker a few seconds
after the app answers, so a page opened right after `up` would otherwise say "No worker is
running" for a worker that is only starting.

`up` names the moment it launched the app in `UP_LAUNCHED_ENV` for the app's process; for
`STARTING_WITHIN_S` after that, the pages say a worker is starting instead. No streamlit here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping

# Set by `python -m jobs up` for the app's process: when it launched the app (Unix seconds).
UP_LAUNCHED_ENV = "SOFTGRADE_UP_LAUNCHED_AT"
# How long after that a missing worker reads as starting: `up` starts it at the latest 10 s
# after the app (jobs/cli/up_command.py WORKER_START_CAP_S), and its first beat follows once
# torch is imported in it (8-10 s of CPU, longer on a loaded 2-core machine).
STARTING_WITHIN_S = 60.0


def worker_starting(now: float, env: Mapping[str, str] | None = None) -> bool:
    """Whether `up` launched this app less than `STARTING_WITHIN_S` before ``now`` (Unix
    seconds), so its worker may still be starting. False without `up`, or for a value that
    is not a time."""
    env = os.environ if env is None else env
    try:
        launched = float(env.get(UP_LAUNCHED_ENV, ""))
    except ValueError:
        return False
    return math.isfinite(launched) and launched <= now < launched + STARTING_WITHIN_S
