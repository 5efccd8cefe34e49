"""The one dataset-cache writer (engine.datasets.image_cache_writer) both cache builders use."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from engine.datasets import image_cache_writer, open_prepared


def _meta(n: int) -> pd.DataFrame:
    return pd.DataFrame({"image_id": [f"im{i}" for i in range(n)], "patient_id": "p0", "kl": 1})


def test_committed_cache_holds_every_file_and_opens(tmp_path):
    out = tmp_path / "cache"
    with image_cache_writer(out, 3, 8, with_masks=True) as cache:
        cache.images[:] = np.arange(3, dtype=np.uint8)[:, None, None]
        cache.masks[1] = 4
        cache.commit(_meta(3), {"kind": "test"})
    assert sorted(p.name for p in out.iterdir()) == [
        "images.npy",
        "manifest.json",
        "masks.npy",
        "meta.csv",
    ]
    assert json.loads((out / "manifest.json").read_text()) == {"kind": "test", "complete": True}
    data = open_prepared(out)
    assert data.images.shape == (3, 8, 8) and data.images[2].max() == 2
    assert np.load(out / "masks.npy")[1].min() == 4
    assert data.meta.image_id.tolist() == ["im0", "im1", "im2"]


def test_cache_without_masks_writes_no_mask_file(tmp_path):
    with image_cache_writer(tmp_path, 2, 4) as cache:
        assert cache.masks is None
        cache.commit(_meta(2), {})
    assert not (tmp_path / "masks.npy").exists()
    assert (tmp_path / "images.npy").exists()


def test_interrupted_write_leaves_no_manifest_and_no_partial_files(tmp_path):
    with image_cache_writer(tmp_path, 2, 4) as cache:
        cache.commit(_meta(2), {"build": 1})
    assert (tmp_path / "manifest.json").exists()
    with pytest.raises(RuntimeError, match="power cut"), image_cache_writer(tmp_path, 5, 4):
        raise RuntimeError("power cut")
    # The old cache's manifest went first, so the folder no longer looks complete.
    assert not (tmp_path / "manifest.json").exists()
    assert not list(tmp_path.glob("*.partial"))
    with pytest.raises(ValueError, match="not a complete dataset cache"):
        open_prepared(tmp_path)


def test_a_draft_never_committed_is_refused(tmp_path):
    with pytest.raises(RuntimeError, match="never committed"), image_cache_writer(tmp_path, 1, 4):
        pass
    assert not (tmp_path / "manifest.json").exists()
    assert not list(tmp_path.glob("*.partial"))


def test_meta_must_have_one_row_per_image(tmp_path):
    with (
        pytest.raises(ValueError, match="meta has 2 rows for 3 images"),
        image_cache_writer(tmp_path, 3, 4) as cache,
    ):
        cache.commit(_meta(2), {})
    assert not (tmp_path / "manifest.json").exists()
