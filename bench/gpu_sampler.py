"""Sample every GPU's use once a second into a CSV, until killed (issue 30's clock).

    python bench/gpu_sampler.py OUT.csv [--period-s 1]

Columns: ``t`` (Unix seconds, this machine's clock, as the store's timestamps), ``gpu``,
``util`` (percent of the period a kernel ran: what ``nvidia-smi dmon``'s ``sm`` shows),
``mem_mib``. Reads NVML (nvidia-ml-py) directly, so it needs neither torch nor a CUDA
context and never disturbs what it watches.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

import pynvml


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--period-s", type=float, default=1.0)
    args = parser.parse_args(argv)
    pynvml.nvmlInit()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with args.out.open("w", buffering=1) as out:
        out.write("t,gpu,util,mem_mib\n")
        while not stopping:
            now = time.time()
            for index, handle in enumerate(handles):
                util = pynvml.nvmlDeviceGetUtilizationRates(handle).gpu
                mem = pynvml.nvmlDeviceGetMemoryInfo(handle).used / 2**20
                out.write(f"{now:.3f},{index},{util},{mem:.0f}\n")
            time.sleep(max(0.0, args.period_s - (time.time() - now)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
