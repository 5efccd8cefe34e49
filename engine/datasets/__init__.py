"""Datasets: the cache format, the splits, and the two cache builders.

==================  =========================================================================
``cache``           the cache format (:func:`image_cache_writer`, :func:`open_prepared`)
``splits``          :func:`make_splits` (patients stratified by grade), :func:`task_split`
``phantom_cache``   :func:`build_phantom_cache`: the phantom rendered, cropped and cached
``folder_cache``    :func:`build_folder_cache`: an imported folder cropped and cached
``prepare``         :func:`prepare_dataset`: the builder a dataset's kind names, then open
==================  =========================================================================
"""

from engine.datasets.cache import (
    IMAGE_CACHE_FILES,
    ImageCacheDraft,
    PreparedDataset,
    cache_dir_for,
    image_cache_writer,
    load_masks,
    open_prepared,
)
from engine.datasets.folder_cache import BOX_META_COLUMNS, CacheProgress, build_folder_cache
from engine.datasets.phantom_cache import PHANTOM_VERSION, build_phantom_cache, is_complete_cache
from engine.datasets.prepare import prepare_dataset
from engine.datasets.splits import (
    TaskSplit,
    check_split_sizes,
    grade_counts,
    make_splits,
    patient_holdout,
    task_split,
)

__all__ = [
    "BOX_META_COLUMNS",
    "IMAGE_CACHE_FILES",
    "PHANTOM_VERSION",
    "CacheProgress",
    "ImageCacheDraft",
    "PreparedDataset",
    "TaskSplit",
    "build_folder_cache",
    "build_phantom_cache",
    "cache_dir_for",
    "check_split_sizes",
    "grade_counts",
    "image_cache_writer",
    "is_complete_cache",
    "load_masks",
    "make_splits",
    "open_prepared",
    "patient_holdout",
    "prepare_dataset",
    "task_split",
]
