"""What the Attention and Grade-a-film pages compute, timed on this machine's CPU.

The pages draw Grad-CAM maps on the app's machine (no GPU needed). This times, at the
paper's 224 px with five ResNet18 models (random weights: the cost does not depend on them):

- "across grades": one test crop per grade (5), each method's map on it: 25 maps;
- the stress test: knees redrawn at one disease's top grade with the other at every grade
  (4 films a knee), each method's map on each: 20 maps a knee;
- one uploaded film on the demo page: find the knee, crop, two models' maps;
- the backward saved by freezing below the target block (maps equal; see engine/gradcam.py).

    .venv/bin/python bench/attention_bench.py
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import torch
from pytorch_grad_cam import GradCAM

from engine.detect import detect_knee_box
from engine.gradcam import BOX_COLUMNS, grad_cam, read_film, stress_films
from engine.phantom import PhantomSpec, phantom_labels, render_film
from engine.train import build_model


def timed(label: str, fn: object, repeats: int) -> float:
    """Median wall time of ``fn()`` over ``repeats`` calls, printed."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    median = float(np.median(times))
    print(f"{label:<58}{median:8.2f} s", flush=True)
    return median


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--methods", type=int, default=5)
    parser.add_argument("--knees", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(
        f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads, "
        f"torch {torch.__version__}, Python {platform.python_version()}, {args.size} px"
    )
    torch.manual_seed(0)
    models = [build_model(5)[0].eval() for _ in range(args.methods)]
    crops = np.random.default_rng(0).integers(0, 256, (5, args.size, args.size), dtype=np.uint8)

    spec = PhantomSpec(n_images=200, n_joint=100, seed=0)
    rows = []
    for _, row in phantom_labels(spec).head(args.knees).iterrows():
        film, _, _ = render_film(spec, row)
        rows.append(row.copy())
        for column, value in zip(BOX_COLUMNS, detect_knee_box(film), strict=True):
            rows[-1][column] = value

    n = args.methods
    timed(
        f"across grades: 5 crops x {n} models ({5 * n} maps)",
        lambda: [grad_cam(m, crops) for m in models],
        args.repeats,
    )
    films = []
    timed(
        f"stress test: redraw {args.knees} knees x 4 levels",
        lambda: films.extend(stress_films(spec, r, "KL", args.size) for r in rows),
        1,
    )
    timed(
        f"stress test: {args.knees} knees x 4 levels x {n} models ({16 * n} maps)",
        lambda: [grad_cam(m, f.images) for f in films[: args.knees] for m in models],
        args.repeats,
    )
    film, _, _ = render_film(spec, rows[0])
    timed(
        "grade a film: find the knee, crop, 2 models' maps",
        lambda: read_film(film, {"KL": models[0], "CPPD": models[1]}, args.size),
        args.repeats,
    )
    x = torch.from_numpy(crops).unsqueeze(1)
    full = GradCAM(models[0], [models[0].backbone.layer4[-1]])
    timed("5 maps, full backward (pytorch-grad-cam alone)", lambda: full(x, None), args.repeats)
    timed(
        "5 maps, backward stopped at layer4 (engine.gradcam)",
        lambda: grad_cam(models[0], crops),
        args.repeats,
    )


if __name__ == "__main__":
    main()
