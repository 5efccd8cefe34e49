"""Crop review into a study: the dataset spec that applies a dataset's review.

Decisions are stored per film (`store.reviews`); a study must name what it trains on, so
`reviewed_spec` writes the current decisions as a review file named by its content (under
``$SOFTGRADE_HOME/reviews/``) and returns the dataset's spec with ``review_csv`` added. The
reviewed dataset is then a dataset of its own (its spec key differs): its cache crops with
the reviewed boxes and holds no excluded film, so its splits never do, while studies that
ran before the review keep the dataset, cache and splits they had.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from engine.config import DatasetSpec
from engine.films import write_review_csv
from store.datasets import dataset_id_for, dataset_params
from store.db import StoreError, default_store_path, softgrade_home
from store.reviews import crop_reviews

#: The dataset parameter naming a crop review file.
REVIEW_PARAM = "review_csv"


@dataclass(frozen=True)
class ReviewedDataset:
    """The spec a study on a dataset should use, and how much of a review it applies."""

    spec: DatasetSpec
    n_excluded: int = 0
    n_boxes: int = 0

    @property
    def reviewed(self) -> bool:
        """Whether the spec applies any review decision."""
        return bool(self.n_excluded or self.n_boxes)


def base_dataset_id(kind: str, params: dict) -> str | None:
    """The dataset a reviewed dataset was reviewed from (None for a dataset without review)."""
    if REVIEW_PARAM not in params:
        return None
    base = {k: v for k, v in params.items() if k != REVIEW_PARAM}
    return dataset_id_for(DatasetSpec(kind, base).key)


def reviewed_spec(
    dataset_id: str, *, home: Path | None = None, store_path: Path | None = None
) -> ReviewedDataset:
    """The registered dataset's spec with its current crop review applied.

    A phantom, a folder nobody reviewed, or a dataset that already is a reviewed one (its
    params name a review file) come back as registered.

    Raises:
        StoreError: No dataset ``dataset_id``.
        engine.config.SpecError: The dataset's film folder is not on this machine.
    """
    path = store_path if store_path is not None else default_store_path()
    found = dataset_params(dataset_id, path=path)
    if found is None:
        raise StoreError(f"no dataset {dataset_id!r} in the store")
    kind, params = found
    if kind != "folder" or REVIEW_PARAM in params:
        return ReviewedDataset(DatasetSpec(kind, params))
    reviews = crop_reviews(dataset_id, path=path)
    if reviews.empty:
        return ReviewedDataset(DatasetSpec(kind, params))
    home = home if home is not None else softgrade_home()
    review_csv = write_review_csv(reviews, home / "reviews")
    spec = DatasetSpec(kind, {**params, REVIEW_PARAM: str(review_csv)})
    n_excluded = int((reviews["action"] == "exclude").sum())
    return ReviewedDataset(spec, n_excluded=n_excluded, n_boxes=len(reviews) - n_excluded)
