"""Knee localisation: the classical detector, trained YOLO detectors, and their scores.

==================  =========================================================================
``classical``       :func:`find_knees` (the one entry point), the classical detector,
                    :func:`crop_and_resize`, sides and the confidence thresholds
``evaluation``      :func:`evaluate_detector`: boxes scored against true knee boxes
``registry``        trained detectors' records and folders (no ultralytics)
``choice``          :class:`DetectorInfo`: the detector an import uses (`choose_detector`)
``yolo``            a trained detector at run time (ultralytics offline, :func:`load_detector`)
``training``        :func:`train_detector`: YOLOv8n from scratch on films with knee boxes
``phantom_sets``    phantom films with their true knee boxes
==================  =========================================================================

Importing this package never imports ultralytics (only :func:`ultralytics_offline` does,
when a trained detector is loaded or trained).
"""

from engine.detect.choice import (
    CLASSICAL_DETECTOR,
    DetectorInfo,
    choose_detector,
    detector_from_params,
    detector_note,
    knee_detector,
    loaded_detector,
    trained_detector_info,
)
from engine.detect.classical import (
    LATERALITY_VALUES,
    LOW_CONFIDENCE,
    SECOND_KNEE_CONFIDENCE,
    KneeDetection,
    KneeDetectorLike,
    assign_sides,
    box_iou,
    classical_knee,
    classical_knees,
    crop_and_resize,
    detect_knee_box,
    find_knees,
    inverted_polarity,
    select_knees,
)
from engine.detect.evaluation import DetectionMetrics, evaluate_detector
from engine.detect.phantom_sets import phantom_detection_set, phantom_films, phantom_trained_on
from engine.detect.registry import (
    CLASSICAL,
    LATEST,
    DetectorRecord,
    choose_record,
    find_detector,
    latest_detector,
    list_detectors,
    read_record,
)
from engine.detect.training import train_detector
from engine.detect.yolo import (
    YOLO_EXTRA,
    KneeDetector,
    YoloUnavailableError,
    load_detector,
    ultralytics_offline,
    yolo_available,
)
from engine.vocab import Box

__all__ = [
    "YOLO_EXTRA",
    "YoloUnavailableError",
    "yolo_available",
    "CLASSICAL",
    "CLASSICAL_DETECTOR",
    "LATERALITY_VALUES",
    "LATEST",
    "LOW_CONFIDENCE",
    "SECOND_KNEE_CONFIDENCE",
    "Box",
    "DetectionMetrics",
    "DetectorInfo",
    "DetectorRecord",
    "KneeDetection",
    "KneeDetector",
    "KneeDetectorLike",
    "assign_sides",
    "box_iou",
    "choose_detector",
    "choose_record",
    "classical_knee",
    "classical_knees",
    "crop_and_resize",
    "detect_knee_box",
    "detector_from_params",
    "detector_note",
    "evaluate_detector",
    "find_detector",
    "find_knees",
    "inverted_polarity",
    "knee_detector",
    "latest_detector",
    "list_detectors",
    "load_detector",
    "loaded_detector",
    "phantom_detection_set",
    "phantom_films",
    "phantom_trained_on",
    "read_record",
    "select_knees",
    "train_detector",
    "trained_detector_info",
    "ultralytics_offline",
]
