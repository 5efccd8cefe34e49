"""Synthetic anteroposterior knee radiographs with KL and CPPD grades.

The real radiographs behind the paper are private, so the default dataset is this phantom
(see ``shared/design/PHANTOM.md`` for the radiology it imitates). Everything is derived from
``PhantomSpec.seed``:

* :func:`phantom_labels` decides, without drawing anything, which films exist: patients and
  sides, true and recorded grades, and the continuous severities that drive the drawing.
* :func:`render_film` draws one film from one label row: a knee is drawn in a fixed
  *canvas* frame (a right knee, medial side on the viewer's right), then mirrored for left
  knees and placed on a larger film at a random position, scale and slight rotation, with
  exposure, blur, noise and the odd marker or collimation edge on top.
* :func:`render_bilateral_film` draws both knees of one patient on one wider film (the
  patient's right knee on the viewer's left), with a :class:`KneeTruth` (box, side, grades,
  mask) per knee.
* `engine.datasets.build_phantom_cache` (outside this package: it crops with the
  detector) renders every film in worker processes, crops each one to the knee found by
  :mod:`engine.detect` and writes ``images.npy``, ``masks.npy``, ``meta.csv`` and, last,
  ``manifest.json``.

The package, one concept a module:

==================  =========================================================================
``spec``            :class:`PhantomSpec`, the difficulty calibration, the random streams
``labels``          grade tables, counts, severities, annotation noise, patients
``anatomy``         one patient's knee shape (shared by both knees)
``lesions``         a film's signs from its severities; the mask layers (``MASK_BITS``)
``canvas``          the frame one knee is drawn in
``knee``            drawing a knee: joint surfaces, femur, tibia, fibula, patella, soft tissue
``joint_signs``     osteophytes and the signs around the joint line (sclerosis, deposits...)
``bone``            bone in projection (cortical shell, textured core)
``texture``         trabecular texture and film noise banks
``film``            placement on the film, exposure, artefacts
``render``          :func:`render_film`, :func:`render_variant`
``bilateral``       :func:`render_bilateral_film`: both knees of a patient on one film
==================  =========================================================================

Difficulty: each grade is drawn from a continuous severity inside a band around it, every
sign gets its own random scatter, and annotation noise moves recorded grades to neighbours,
so adjacent grades are genuinely confusable. ``PhantomSpec.difficulty`` scales all of that
together with the nuisance; its default is calibrated against ResNet18 (see
``spec.DIFFICULTY_SCALE``).

Speed: drawing is vectorised numpy/OpenCV over precomputed coordinate grids, bones are
shaded only inside their bounding boxes, lesions only in a band of rows around the joint,
and trabecular texture and film noise are windows cut at random from per-process banks
(fixed seeds, so every process draws the same bytes).
"""

from engine.phantom.bilateral import KneeTruth, bilateral_film_size, render_bilateral_film
from engine.phantom.labels import (
    CPPD_TOTALS,
    JOINT_COUNTS,
    cppd_only_counts,
    joint_cell_counts,
    phantom_labels,
)
from engine.phantom.lesions import MASK_BITS
from engine.phantom.render import render_film, render_variant
from engine.phantom.spec import PhantomSpec

__all__ = [
    "CPPD_TOTALS",
    "JOINT_COUNTS",
    "KneeTruth",
    "MASK_BITS",
    "PhantomSpec",
    "bilateral_film_size",
    "cppd_only_counts",
    "joint_cell_counts",
    "phantom_labels",
    "render_bilateral_film",
    "render_film",
    "render_variant",
]
