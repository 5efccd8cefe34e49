"""Behaviour of the synthetic knee phantom: counts, labels, drawing and the cache."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.datasets import build_phantom_cache, is_complete_cache, phantom_cache
from engine.phantom import (
    CPPD_TOTALS,
    JOINT_COUNTS,
    MASK_BITS,
    PhantomSpec,
    bilateral_film_size,
    cppd_only_counts,
    joint_cell_counts,
    phantom_labels,
    render_bilateral_film,
    render_film,
    render_variant,
)
from engine.phantom.anatomy import patient_anatomy

REFERENCE_CSV = Path(__file__).resolve().parents[3] / "shared/reference/kl_cppd_contingency.csv"
TINY = PhantomSpec(n_images=40, n_joint=20, seed=3)


@pytest.fixture(scope="module")
def default_labels() -> pd.DataFrame:
    return phantom_labels(PhantomSpec())


def _crosstab(labels: pd.DataFrame) -> np.ndarray:
    joint = labels[labels.joint_annotated]
    table = np.zeros(JOINT_COUNTS.shape, np.int64)
    np.add.at(table, (joint.kl_true.to_numpy(int), joint.cppd_true.to_numpy(int)), 1)
    return table


# ---- spec ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"n_images": 0}, "n_images"),
        ({"n_images": 10, "n_joint": 11}, "n_joint"),
        ({"n_joint": -1}, "n_joint"),
        ({"seed": -1}, "seed"),
        ({"film_size": (100, 320)}, "film_size"),
        ({"film_size": (384,)}, "film_size"),
        ({"annotation_noise": 1.5}, "annotation_noise"),
        ({"difficulty": 0.0}, "difficulty"),
        ({"n_images": 2.5}, "n_images"),
    ],
)
def test_spec_rejects_bad_values(kwargs, field):
    with pytest.raises(ValueError, match=field):
        PhantomSpec(**kwargs)


# ---- counts --------------------------------------------------------------------------


def test_joint_counts_match_contingency_table_at_default_size(default_labels):
    assert np.array_equal(_crosstab(default_labels), JOINT_COUNTS)
    if REFERENCE_CSV.exists():  # the embedded table is a copy of the reference file
        ref = pd.read_csv(REFERENCE_CSV, index_col="kl").to_numpy()
        assert np.array_equal(ref, JOINT_COUNTS)
    assert default_labels.kl.notna().sum() == 970
    assert default_labels.kl[~default_labels.joint_annotated].isna().all()


def test_cppd_only_counts_match_paper_totals(default_labels):
    totals = np.bincount(default_labels.cppd_true, minlength=4)
    assert totals.tolist() == CPPD_TOTALS.tolist() == [816, 372, 480, 502]
    only = default_labels[~default_labels.joint_annotated]
    assert np.bincount(only.cppd_true, minlength=4).tolist() == [307, 199, 332, 362]


@pytest.mark.parametrize("n_joint", [1, 20, 100, 333, 2000])
def test_joint_counts_scale_by_largest_remainder(n_joint):
    counts = joint_cell_counts(n_joint)
    assert counts.sum() == n_joint
    quota = JOINT_COUNTS / JOINT_COUNTS.sum() * n_joint
    assert np.all(np.abs(counts - quota) < 1.0)
    only = cppd_only_counts(n_joint)
    assert only.sum() == n_joint


@pytest.mark.parametrize(("n_images", "n_joint"), [(40, 20), (7, 0), (5, 5), (1, 1)])
def test_any_size_gives_that_many_films(n_images, n_joint):
    labels = phantom_labels(PhantomSpec(n_images=n_images, n_joint=n_joint))
    assert len(labels) == n_images
    assert int(labels.joint_annotated.sum()) == n_joint
    assert labels.image_id.is_unique
    assert labels.film_index.tolist() == list(range(n_images))


# ---- labels --------------------------------------------------------------------------


def test_annotation_noise_moves_only_to_adjacent_grades(default_labels):
    joint = default_labels[default_labels.joint_annotated]
    kl_step = (joint.kl.astype(int) - joint.kl_true.astype(int)).abs()
    cppd_step = (default_labels.cppd - default_labels.cppd_true).abs()
    assert kl_step.max() == 1 and cppd_step.max() == 1
    # 10 % noise; binomial sd at these sizes is under 1 %.
    assert 0.07 < (kl_step > 0).mean() < 0.13
    assert 0.08 < (cppd_step > 0).mean() < 0.12
    assert default_labels.kl.dropna().between(0, 4).all()
    assert default_labels.cppd.between(0, 3).all()


def test_no_annotation_noise_keeps_true_grades():
    labels = phantom_labels(PhantomSpec(n_images=300, n_joint=150, annotation_noise=0.0))
    joint = labels[labels.joint_annotated]
    assert (joint.kl.astype(int) == joint.kl_true.astype(int)).all()
    assert (labels.cppd == labels.cppd_true).all()


def test_severity_stays_in_grade_band_and_adjacent_bands_meet(default_labels):
    lo = default_labels.groupby("kl_true").kl_severity.min()
    hi = default_labels.groupby("kl_true").kl_severity.max()
    for k in range(1, 5):
        assert hi[k - 1] > lo[k] - 0.05  # late grade k-1 reaches early grade k
    assert (default_labels.cppd_severity[default_labels.cppd_true == 0] == 0).all()
    assert (default_labels.cppd_severity[default_labels.cppd_true > 0] >= 0.35).all()


def test_patients_have_one_or_two_knees_on_distinct_sides_and_one_annotation(default_labels):
    per_patient = default_labels.groupby("patient_id")
    assert per_patient.size().between(1, 2).all()
    assert (per_patient.size() == 2).mean() > 0.8  # mostly bilateral
    two = per_patient.filter(lambda g: len(g) == 2)
    assert (two.groupby("patient_id").side.nunique() == 2).all()
    assert (per_patient.joint_annotated.nunique() == 1).all()
    assert set(default_labels.side) == {"L", "R"}


def test_labels_are_deterministic_and_seed_dependent():
    a = phantom_labels(TINY)
    pd.testing.assert_frame_equal(a, phantom_labels(TINY))
    b = phantom_labels(PhantomSpec(n_images=40, n_joint=20, seed=4))
    assert not a.kl_severity.equals(b.kl_severity)


# ---- drawing -------------------------------------------------------------------------


def test_render_film_returns_film_mask_and_box_inside_the_film():
    labels = phantom_labels(TINY)
    film, mask, box = render_film(TINY, labels.iloc[0])
    h, w = TINY.film_size
    assert film.shape == mask.shape == (h, w)
    assert film.dtype == mask.dtype == np.uint8
    x0, y0, x1, y1 = box
    assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
    assert int(np.bitwise_or.reduce(mask.ravel())) & ~sum(MASK_BITS.values()) == 0
    film2, mask2, box2 = render_film(TINY, labels.iloc[0].to_dict())
    assert np.array_equal(film, film2) and np.array_equal(mask, mask2) and box == box2


def test_film_reads_as_bone_brighter_than_soft_tissue_brighter_than_air():
    labels = phantom_labels(TINY)
    film, mask, (x0, y0, x1, y1) = render_film(TINY, labels.iloc[1])
    knee = film[y0:y1, x0:x1]
    # The knee box is mostly bone (bright); the film's darkest decile is air.
    assert np.percentile(knee, 75) > np.percentile(film, 10) + 100
    joint = (mask & MASK_BITS["joint_space"]) > 0
    assert joint.any()
    # The joint space is darker than the bone around it.
    assert film[joint].mean() < np.percentile(knee, 60) - 30


def test_left_and_right_knees_are_mirrored():
    # One patient, one film drawn twice with only the side changed: the knee is placed
    # identically, so the narrowed medial compartment must swap sides of the box.
    base = phantom_labels(TINY).iloc[2].to_dict()
    base |= {"narrow_medial": 0.8, "narrow_lateral": 0.0, "kl_severity": 3.0}
    areas = {}
    for side in ("R", "L"):
        _, mask, (x0, _, x1, _) = render_film(TINY, base | {"side": side})
        joint = (mask & MASK_BITS["joint_space"]) > 0
        mid = (x0 + x1) // 2
        areas[side] = (joint[:, :mid].sum(), joint[:, mid:].sum())
    # Right knee: medial on the viewer's right; left knee: medial on the viewer's left.
    assert areas["R"][1] < 0.6 * areas["R"][0]
    assert areas["L"][0] < 0.6 * areas["L"][1]
    # Both knees of a patient draw their anatomy from the patient, not the film.
    labels = phantom_labels(PhantomSpec())
    pair = labels[labels.patient_id == labels.patient_id.iloc[0]]
    anatomies = {patient_anatomy(0, int(p)) for p in pair.patient_index}
    assert len(anatomies) == 1


def test_masks_mark_calcifications_only_when_cppd_positive():
    spec = PhantomSpec(n_images=60, n_joint=30, seed=1)
    labels = phantom_labels(spec)
    has_calc = []
    for _, row in labels.iterrows():
        _, mask, _ = render_film(spec, row)
        has_calc.append(bool((mask & MASK_BITS["calcifications"]).any()))
    has_calc = np.array(has_calc)
    positive = labels.cppd_true.to_numpy() > 0
    assert not has_calc[~positive].any()
    assert has_calc[positive].all()


def test_higher_kl_narrows_joint_space(default_labels):
    spec = PhantomSpec()
    mean_area = []
    for k in range(5):
        rows = default_labels[default_labels.kl_true == k].head(8)
        areas = []
        for _, row in rows.iterrows():
            _, mask, (x0, y0, x1, y1) = render_film(spec, row)
            # Normalise by the box area: the knee's scale on the film is random.
            areas.append(((mask & MASK_BITS["joint_space"]) > 0).sum() / ((x1 - x0) * (y1 - y0)))
        mean_area.append(np.mean(areas))
    assert all(a > b for a, b in zip(mean_area, mean_area[1:], strict=False))
    assert mean_area[4] < 0.6 * mean_area[0]


def test_osteophytes_and_sclerosis_appear_with_kl(default_labels):
    spec = PhantomSpec()
    found = {}
    for k in (0, 4):
        rows = default_labels[default_labels.kl_true == k].head(6)
        masks = [render_film(spec, row)[1] for _, row in rows.iterrows()]
        found[k] = [
            np.mean([(m & MASK_BITS[name]).any() for m in masks])
            for name in ("osteophytes", "sclerosis")
        ]
    assert found[0] == [0.0, 0.0]
    assert found[4] == [1.0, 1.0]


# Films drawn before engine/phantom.py became a package (commit 3de5e32): sha256 of film,
# mask and box bytes. Any change to the drawing changes these; if the change is meant, say
# so in the commit and pin the new hashes. (The bytes depend on numpy and OpenCV, pinned in
# requirements.txt.)
_SMALL = {"n_images": 30, "n_joint": 10}
PINNED_FILMS = {
    "seed3-kl0": (TINY, "kl_true", 0, None, "e34e106b35667814"),
    "seed3-kl4": (TINY, "kl_true", 4, None, "371cf10a62375afa"),
    "seed3-cppd3": (TINY, "cppd_true", 3, None, "dbad942dc52203ef"),
    "seed7-wide": (
        PhantomSpec(**_SMALL, seed=7, film_size=(256, 512)),
        "kl_true",
        2,
        None,
        "aa64474d39d9926e",
    ),
    "seed11-small-hard": (
        PhantomSpec(**_SMALL, seed=11, film_size=(160, 160), difficulty=2.0),
        "kl_true",
        3,
        None,
        "128269059b12f0ea",
    ),
    "seed5-large-easy": (
        PhantomSpec(n_images=30, n_joint=30, seed=5, film_size=(600, 480), difficulty=0.5),
        "cppd_true",
        1,
        None,
        "7f279c9f2a55d65f",
    ),
    "seed3-variant": (TINY, "kl_true", 1, {"KL": 4, "CPPD": 2}, "067aa2d6f8b211e0"),
}


@pytest.mark.parametrize("case", sorted(PINNED_FILMS))
def test_films_are_bit_identical_to_the_pinned_ones(case):
    spec, column, grade, variant, pinned = PINNED_FILMS[case]
    labels = phantom_labels(spec)
    row = labels[labels[column] == grade].iloc[0]
    film, mask, box = render_variant(spec, row, variant) if variant else render_film(spec, row)
    digest = hashlib.sha256(film.tobytes() + mask.tobytes() + np.asarray(box, np.int64).tobytes())
    assert digest.hexdigest()[:16] == pinned


# ---- cache ---------------------------------------------------------------------------


def _read_cache(path: Path) -> dict[str, bytes]:
    return {name: (path / name).read_bytes() for name in ("images.npy", "masks.npy", "meta.csv")}


@pytest.mark.slow  # starts a process (tests/helpers/tier_guard.py)
def test_same_seed_gives_identical_cache(tmp_path):
    a = build_phantom_cache(TINY, 48, tmp_path / "a", workers=1)
    b = build_phantom_cache(TINY, 48, tmp_path / "b", workers=2)  # spawned workers
    assert _read_cache(a) == _read_cache(b)
    other_seed = PhantomSpec(n_images=40, n_joint=20, seed=4)
    c = build_phantom_cache(other_seed, 48, tmp_path / "c", workers=1)
    assert _read_cache(c)["images.npy"] != _read_cache(a)["images.npy"]


def test_cache_holds_crops_masks_and_meta(tmp_path):
    out = build_phantom_cache(TINY, 64, tmp_path / "cache", workers=1)
    images = np.load(out / "images.npy")
    masks = np.load(out / "masks.npy")
    meta = pd.read_csv(out / "meta.csv")
    assert images.shape == masks.shape == (40, 64, 64)
    assert images.dtype == masks.dtype == np.uint8
    assert len(meta) == 40
    for col in (
        "image_id",
        "patient_id",
        "side",
        "kl",
        "kl_true",
        "cppd",
        "cppd_true",
        "true_x0",
        "det_y1",
        "box_iou",
    ):
        assert col in meta.columns
    assert meta.kl.isna().sum() == 20
    assert (meta.box_iou > 0.5).mean() > 0.9
    # Crops are knees: bright bone dominates the middle of every crop.
    assert np.median(images[:, 16:48, 16:48]) > np.median(images[:, :, :4]) + 30
    assert ((masks & MASK_BITS["joint_space"]) > 0).any(axis=(1, 2)).all()
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["complete"] is True and manifest["spec"]["n_images"] == 40


def test_complete_cache_is_reused_and_other_specs_rebuild(tmp_path):
    out = build_phantom_cache(TINY, 32, tmp_path / "cache", workers=1)
    stamp = (out / "images.npy").stat().st_mtime_ns
    build_phantom_cache(TINY, 32, out, workers=1)
    assert (out / "images.npy").stat().st_mtime_ns == stamp
    assert not is_complete_cache(out, TINY, 48, "classical")
    build_phantom_cache(TINY, 48, out, workers=1)
    assert np.load(out / "images.npy").shape == (40, 48, 48)
    assert is_complete_cache(out, TINY, 48, "classical")


def test_cache_is_not_marked_complete_until_written(tmp_path, monkeypatch):
    out = tmp_path / "cache"
    build_phantom_cache(TINY, 32, out, workers=1)
    assert is_complete_cache(out, TINY, 32, "classical")

    calls = {"n": 0}
    real_render = phantom_cache.render_film

    def crashing_render(spec, row):
        calls["n"] += 1
        if calls["n"] > 25:
            raise RuntimeError("power cut")
        return real_render(spec, row)

    monkeypatch.setattr(phantom_cache, "render_film", crashing_render)
    with pytest.raises(RuntimeError, match="power cut"):
        build_phantom_cache(TINY, 48, out, workers=1)
    # The old manifest went first, and no new one was written.
    assert not (out / "manifest.json").exists()
    assert not is_complete_cache(out, TINY, 32, "classical")
    assert not is_complete_cache(out, TINY, 48, "classical")

    monkeypatch.setattr(phantom_cache, "render_film", real_render)
    build_phantom_cache(TINY, 48, out, workers=1)
    assert is_complete_cache(out, TINY, 48, "classical")


def test_truth_detector_crops_to_the_true_box(tmp_path):
    out = build_phantom_cache(TINY, 32, tmp_path / "cache", workers=1, detector="truth")
    meta = pd.read_csv(out / "meta.csv")
    assert (meta.box_iou == 1.0).all()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"image_size": 8}, "image_size"),
        ({"detector": "yolo9"}, "detector"),
        ({"workers": 0}, "workers"),
    ],
)
def test_cache_rejects_bad_arguments(tmp_path, kwargs, field):
    args = {"image_size": 32, "detector": "classical", "workers": 1} | kwargs
    with pytest.raises(ValueError, match=field):
        build_phantom_cache(TINY, args.pop("image_size"), tmp_path, **args)


def _layer(mask: np.ndarray, name: str) -> np.ndarray:
    return (mask & MASK_BITS[name]) > 0


@pytest.fixture(scope="module")
def variant_labels() -> pd.DataFrame:
    return phantom_labels(PhantomSpec(n_images=300, n_joint=150, seed=3))


def test_variant_redraws_only_the_deposits_when_cppd_varies(variant_labels):
    spec = PhantomSpec(n_images=300, n_joint=150, seed=3)
    row = variant_labels[variant_labels.kl_true == 4].iloc[0]
    _, original_mask, original_box = render_film(spec, row)
    calcified = []
    for grade in range(4):
        film, mask, box = render_variant(spec, row, {"CPPD": grade})
        assert box == original_box and film.shape == spec.film_size
        for name in ("osteophytes", "sclerosis", "joint_space"):
            assert np.array_equal(_layer(mask, name), _layer(original_mask, name)), name
        calcified.append(int(_layer(mask, "calcifications").sum()))
    assert calcified[0] == 0  # CPPD 0: no deposits at all
    assert calcified[1] < calcified[2] < calcified[3]


def test_variant_narrows_the_joint_and_grows_osteophytes_when_kl_varies(variant_labels):
    spec = PhantomSpec(n_images=300, n_joint=150, seed=3)
    row = variant_labels[variant_labels.cppd_true == 3].iloc[0]
    _, _, original_box = render_film(spec, row)
    masks = [render_variant(spec, row, {"KL": grade}) for grade in range(5)]
    assert all(box == original_box for _, _, box in masks)
    joint_space = [int(_layer(m, "joint_space").sum()) for _, m, _ in masks]
    osteophytes = [int(_layer(m, "osteophytes").sum()) for _, m, _ in masks]
    assert joint_space[0] > joint_space[2] > joint_space[4]
    assert osteophytes[0] == 0 and osteophytes[4] > osteophytes[2] > 0
    assert all(_layer(m, "calcifications").any() for _, m, _ in masks)  # CPPD 3 stays


def test_variant_redraws_both_diseases_when_asked(variant_labels):
    spec = PhantomSpec(n_images=300, n_joint=150, seed=3)
    row = variant_labels[(variant_labels.kl_true == 0) & (variant_labels.cppd_true == 0)].iloc[0]
    _, mask, _ = render_variant(spec, row, {"KL": 4, "CPPD": 3})
    _, top_kl, _ = render_variant(spec, row, {"KL": 4})
    assert _layer(mask, "osteophytes").sum() > 0 and _layer(mask, "calcifications").sum() > 0
    assert np.array_equal(_layer(mask, "osteophytes"), _layer(top_kl, "osteophytes"))
    assert not _layer(top_kl, "calcifications").any()  # the film's own CPPD 0 kept


def test_variant_refuses_an_unknown_task_or_grade(variant_labels):
    row = variant_labels.iloc[0]
    with pytest.raises(ValueError, match="task must be one of"):
        render_variant(TINY, row, {"OA": 1})
    with pytest.raises(ValueError, match=r"CPPD grade must be 0\.\.3, not 4"):
        render_variant(TINY, row, {"KL": 2, "CPPD": 4})


# ---- bilateral films -----------------------------------------------------------------


@pytest.fixture(scope="module")
def bilateral_labels() -> pd.DataFrame:
    return phantom_labels(TINY)


def _patients(labels: pd.DataFrame, n_knees: int) -> list[int]:
    sizes = labels.groupby("patient_index").size()
    return sizes[sizes == n_knees].index.tolist()


def _boxes_overlap(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def test_bilateral_film_holds_both_knees_right_knee_on_the_viewers_left(bilateral_labels):
    for patient in _patients(bilateral_labels, 2)[:4]:
        film, knees = render_bilateral_film(TINY, patient, bilateral_labels)
        h, w = TINY.film_size
        assert film.shape == bilateral_film_size(TINY) == (h, 2 * w) and film.dtype == np.uint8
        right, left = knees
        assert (right.side, left.side) == ("R", "L")
        # Radiographic convention: the patient's right knee is on the viewer's left.
        assert right.box[2] <= left.box[0]
        assert not _boxes_overlap(right.box, left.box)
        for knee in knees:
            x0, y0, x1, y1 = knee.box
            assert 0 <= x0 < x1 <= 2 * w and 0 <= y0 < y1 <= h
            assert knee.mask.shape == film.shape
            joint = (knee.mask & MASK_BITS["joint_space"]) > 0
            ys, xs = np.nonzero(joint)
            assert joint.any() and x0 <= xs.min() and xs.max() < x1  # its joint, in its box
            assert y0 <= ys.min() and ys.max() < y1


def test_bilateral_knees_carry_their_own_grades_as_labelled(bilateral_labels):
    patient = _patients(bilateral_labels, 2)[0]
    _, knees = render_bilateral_film(TINY, patient)  # labels computed when not given
    rows = bilateral_labels[bilateral_labels.patient_index == patient].set_index("image_id")
    assert sorted(k.image_id for k in knees) == sorted(rows.index)
    for knee in knees:
        row = rows.loc[knee.image_id]
        assert knee.side == row.side and knee.patient_id == row.patient_id
        assert (knee.kl_true, knee.cppd, knee.cppd_true) == (
            row.kl_true,
            row.cppd,
            row.cppd_true,
        )
        assert knee.kl == (None if pd.isna(row.kl) else int(row.kl))
        has_calc = bool((knee.mask & MASK_BITS["calcifications"]).any())
        assert has_calc == (row.cppd_true > 0)


def test_bilateral_knees_face_each_other_with_their_medial_sides(bilateral_labels):
    # Both knees narrowed medially only: the narrow compartment of each knee lies towards
    # the middle of the film.
    labels = bilateral_labels.copy()
    labels[["narrow_medial", "narrow_lateral", "kl_severity"]] = (0.8, 0.0, 3.0)
    _, knees = render_bilateral_film(TINY, _patients(labels, 2)[0], labels)
    for knee in knees:
        x0, _, x1, _ = knee.box
        joint = (knee.mask & MASK_BITS["joint_space"]) > 0
        mid = (x0 + x1) // 2
        halves = {"viewer_left": joint[:, x0:mid].sum(), "viewer_right": joint[:, mid:x1].sum()}
        medial = halves["viewer_right" if knee.side == "R" else "viewer_left"]
        lateral = halves["viewer_left" if knee.side == "R" else "viewer_right"]
        assert medial < 0.6 * lateral


def test_bilateral_film_of_a_one_knee_patient_shows_that_knee_in_its_half(bilateral_labels):
    patient = _patients(bilateral_labels, 1)[0]
    film, knees = render_bilateral_film(TINY, patient, bilateral_labels)
    (knee,) = knees
    w = TINY.film_size[1]
    assert knee.box[2] <= w if knee.side == "R" else knee.box[0] >= w


def test_bilateral_film_is_deterministic_and_single_films_stay_as_they_were(bilateral_labels):
    patient = _patients(bilateral_labels, 2)[1]
    film_a, knees_a = render_bilateral_film(TINY, patient, bilateral_labels)
    film_b, knees_b = render_bilateral_film(TINY, patient, bilateral_labels)
    assert np.array_equal(film_a, film_b)
    assert [k.box for k in knees_a] == [k.box for k in knees_b]
    # Drawing a bilateral film touches no single film's stream.
    row = bilateral_labels[bilateral_labels.patient_index == patient].iloc[0]
    before = render_film(TINY, row)
    render_bilateral_film(TINY, patient, bilateral_labels)
    after = render_film(TINY, row)
    assert all(np.array_equal(a, b) for a, b in zip(before[:2], after[:2], strict=True))


def test_bilateral_film_refuses_an_unknown_patient(bilateral_labels):
    top = int(bilateral_labels.patient_index.max())
    with pytest.raises(ValueError, match=rf"patient_index must be 0\.\.{top}, not {top + 1}"):
        render_bilateral_film(TINY, top + 1, bilateral_labels)


def test_the_cache_fingerprint_hashes_the_phantom_its_builder_and_the_detector_only():
    engine_dir = Path(phantom_cache.__file__).resolve().parents[1]
    sources = phantom_cache.fingerprinted_sources()
    phantom_modules = sorted((engine_dir / "phantom").glob("*.py"))
    assert sources == [
        *phantom_modules,
        engine_dir / "datasets" / "phantom_cache.py",
        engine_dir / "detect" / "classical.py",
    ]
    assert engine_dir / "phantom" / "render.py" in sources
