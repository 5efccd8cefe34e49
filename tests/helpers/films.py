"""Films, folders and tables written for tests: phantom films as PNG or DICOM, labels CSVs,
planted faults, fake detectors."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


def meta_frame(n_patients: int = 40, seed: int = 0) -> pd.DataFrame:
    """Synthetic image meta: two knees per patient, half jointly graded."""
    rng = np.random.default_rng(seed)
    rows = []
    for p in range(n_patients):
        joint = p % 2 == 0
        for side in ("L", "R"):
            kl = int(rng.integers(0, 5)) if joint else None
            cppd = int(rng.integers(0, 4))
            rows.append(
                {
                    "image_id": f"im{p:03d}{side}",
                    "patient_id": f"p{p:03d}",
                    "side": side,
                    "kl": kl,
                    "kl_true": kl,
                    "cppd": cppd,
                    "cppd_true": cppd,
                }
            )
    frame = pd.DataFrame(rows)
    for col in ("kl", "kl_true"):
        frame[col] = frame[col].astype("Int64")
    return frame


def phantom_film(seed: int = 5, index: int = 0) -> np.ndarray:
    """A whole phantom radiograph (H, W) uint8, knee not yet cropped."""
    from engine.phantom import PhantomSpec, phantom_labels, render_film

    spec = PhantomSpec(n_images=10, n_joint=5, seed=seed)
    return render_film(spec, phantom_labels(spec).iloc[index])[0]


def dicom_bytes(
    pixels: np.ndarray,
    *,
    photometric: str = "MONOCHROME2",
    syntax: str = "1.2.840.10008.1.2.1",
    **elements: object,
) -> bytes:
    """A DICOM Part 10 file of a grey image (pydicom writes it; no real scan needed)."""
    from pydicom.dataset import FileDataset, FileMetaDataset
    from pydicom.uid import UID, generate_uid

    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = UID("1.2.840.10008.5.1.4.1.1.1")  # computed radiography
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = UID(syntax)
    ds = FileDataset("knee.dcm", {}, file_meta=meta, preamble=b"\0" * 128)
    ds.Rows, ds.Columns = pixels.shape[-2:]
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = photometric
    ds.BitsAllocated, ds.BitsStored, ds.HighBit = 16, 12, 11
    ds.PixelRepresentation = 0
    raw = pixels.astype(np.uint16).tobytes()
    if meta.TransferSyntaxUID.is_compressed:
        from pydicom.encaps import encapsulate

        raw = encapsulate([raw])  # framed as compressed data; not a real codestream
    ds.PixelData = raw
    ds["PixelData"].VR = "OB" if meta.TransferSyntaxUID.is_compressed else "OW"
    for keyword, value in elements.items():
        setattr(ds, keyword, value)
    buffer = io.BytesIO()
    ds.save_as(buffer, enforce_file_format=True)
    return buffer.getvalue()


def dicom_bomb_bytes() -> bytes:
    """A small RLE DICOM whose header declares 30000 x 30000 px x 8 frames of 16 bits (14 GB
    decoded); its pixel data is a few bytes (issue 23's decompression bomb, in small)."""
    return dicom_bytes(
        np.zeros((64, 64), np.uint16),
        syntax="1.2.840.10008.1.2.5",
        Rows=30000,
        Columns=30000,
        NumberOfFrames=8,
    )


JPEG_LOSSLESS_KNEE = Path(__file__).parent / "data" / "jpeg_lossless_knee.dcm"


def corrupt_jpeg_lossless_dicom() -> bytes:
    """The JPEG Lossless knee (GDCM wrote it) with its codestream scrambled after 200 bytes:
    pydicom's GDCM decoder fails on it with an AttributeError, which pydicom logs with its
    traceback, and libjpeg prints "Corrupt JPEG data" itself (issue 31)."""
    data = bytearray(JPEG_LOSSLESS_KNEE.read_bytes())
    start = data.index(b"\xff\xd8") + 200  # 200 bytes into the JPEG codestream
    noise = np.random.default_rng(0).integers(0, 256, len(data) - 20 - start, dtype=np.uint8)
    data[start : len(data) - 20] = noise.tobytes()
    return bytes(data)


def write_film_folder(
    root: Path, *, n: int, n_joint: int, seed: int, fmt: str = "png"
) -> tuple[Path, Path, pd.DataFrame]:
    """``n`` phantom films as PNG or DICOM files in ``root/films``, with ``labels.csv`` in the
    folder (image, patient_id, side, kl, cppd). Returns the folder, the CSV and the labels."""
    from PIL import Image

    from engine.phantom import PhantomSpec, phantom_labels, render_film

    spec = PhantomSpec(n_images=n, n_joint=n_joint, seed=seed)
    labels = phantom_labels(spec)
    folder = root / "films"
    folder.mkdir()
    rows = []
    for _, row in labels.iterrows():
        film, _, _ = render_film(spec, row)
        name = f"{row.image_id}.{fmt}"
        if fmt == "dcm":
            (folder / name).write_bytes(dicom_bytes(film.astype(np.uint16) * 16))
        else:
            Image.fromarray(film).save(folder / name)
        rows.append(
            {
                "image": name,
                "patient_id": row.patient_id,
                "side": row.side,
                "kl": row.kl,
                "cppd": row.cppd,
            }
        )
    csv = folder / "labels.csv"
    pd.DataFrame(rows).to_csv(csv, index=False)
    return folder, csv, labels


def write_reviewed_folder(root: Path, store: Path, *, n: int = 8, n_reviewed: int = 8) -> str:
    """``n`` phantom films imported as a dataset named "lab", the first ``n_reviewed`` of
    them given their true knee box in crop review (as a reviewer confirming the box would).
    Returns the dataset id."""
    from engine.films import check_import
    from engine.phantom import PhantomSpec, render_film
    from jobs.services.importer import register_import
    from store.reviews import record_review

    seed = 2
    folder, _, labels = write_film_folder(root, n=n, n_joint=n, seed=seed)
    done = register_import(check_import(folder), name="lab", store_path=store)
    spec = PhantomSpec(n_images=n, n_joint=n, seed=seed)
    for _, row in labels.iloc[:n_reviewed].iterrows():
        _, _, box = render_film(spec, row)
        record_review(done.dataset_id, row.image_id, "box", box, path=store)
    return done.dataset_id


@dataclass(frozen=True)
class FaultyFolder:
    """A folder of good phantom films plus the seven faults of issue 12, planted.

    ``faults`` maps each fault's file (as the CSV names it) to what is wrong with it;
    ``good`` are the files a dataset registered with bad films skipped holds.
    """

    folder: Path
    csv: Path
    faults: dict[str, str]
    good: frozenset[str]


def png_bytes(pixels: np.ndarray) -> bytes:
    """A grey (H, W) uint8 array as PNG file bytes."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def write_faulty_folder(root: Path, *, n: int = 60, seed: int = 4) -> FaultyFolder:
    """``n`` phantom films with a labels CSV, then the faults: a truncated PNG, a text file
    named .png, an empty file, a listed file that is missing, an image listed twice, the
    same pixels as the first film under another name and patient, and ``kl=7`` with
    ``side=X``. Grades are spread so every grade has enough films (no rare-grade warning)."""
    from PIL import Image

    folder, csv, _ = write_film_folder(root, n=n, n_joint=n, seed=seed)
    table = pd.read_csv(csv, dtype={"patient_id": str})
    table["kl"] = [i % 5 for i in range(n)]
    table["cppd"] = [i % 4 for i in range(n)]
    first = np.asarray(Image.open(folder / table.at[0, "image"]))
    (folder / "truncated.png").write_bytes(png_bytes(first[::-1].copy())[:2000])
    (folder / "notes.png").write_text("knee study notes: not a film\n")
    (folder / "empty.png").write_bytes(b"")
    (folder / "twice.png").write_bytes(png_bytes(first[:, ::-1].copy()))
    (folder / "copy.png").write_bytes(png_bytes(first))
    (folder / "odd.png").write_bytes(png_bytes(first[::-1, ::-1].copy()))
    extra = [
        ("truncated.png", "q-trunc", "L", 1, 1),
        ("notes.png", "q-notes", "L", 1, 1),
        ("empty.png", "q-empty", "L", 1, 1),
        ("missing.png", "q-missing", "L", 1, 1),
        ("twice.png", "q-twice", "L", 1, 1),
        ("twice.png", "q-twice", "L", 2, 1),
        ("copy.png", "q-copy", "R", int(table.at[0, "kl"]), int(table.at[0, "cppd"])),
        ("odd.png", "q-odd", "X", 7, 1),
    ]
    rows = pd.DataFrame(extra, columns=["image", "patient_id", "side", "kl", "cppd"])
    pd.concat([table, rows], ignore_index=True).to_csv(csv, index=False)
    faults = {
        "truncated.png": "truncated PNG",
        "notes.png": "a text file named .png",
        "empty.png": "an empty file",
        "missing.png": "a listed file that is missing",
        "twice.png": "an image listed twice",
        "copy.png": f"the same pixels as {table.at[0, 'image']} under another patient",
        "odd.png": "kl=7 and side=X",
    }
    # The first film and its copy are both left out: which patient it belongs to is unknown.
    good = frozenset(table["image"][1:])
    return FaultyFolder(folder, csv, faults, good)


def write_bilateral_folder(root: Path, n_patients: int = 3) -> tuple[Path, dict[str, dict]]:
    """Bilateral phantom films of patients with both knees, listed once per knee.

    Returns:
        The folder and, per image id the import should give, the knee's truth.
    """
    from PIL import Image

    from engine.phantom import PhantomSpec, phantom_labels, render_bilateral_film

    spec = PhantomSpec(n_images=16, n_joint=16, seed=3)
    labels = phantom_labels(spec)
    both = [p for p, g in labels.groupby("patient_index") if sorted(g["side"]) == ["L", "R"]]
    folder = root / "bilateral"
    folder.mkdir()
    rows, truth = [], {}
    for p in both[:n_patients]:
        film, knees = render_bilateral_film(spec, int(p), labels)
        name = f"film{p:02d}.png"
        Image.fromarray(film).save(folder / name)
        for knee in knees:
            rows.append((name, knee.patient_id, knee.side, knee.kl, knee.cppd))
            truth[f"film{p:02d}_{knee.side}"] = {
                "box": knee.box,
                "kl": knee.kl,
                "cppd": knee.cppd,
                "side": knee.side,
            }
    pd.DataFrame(rows, columns=["image", "patient_id", "side", "kl", "cppd"]).to_csv(
        folder / "labels.csv", index=False
    )
    return folder, truth


def fake_detector(detectors: Path, key: str, created_at: str, **held: float) -> object:
    """A detector folder with a record and an (empty) weights file: enough to be chosen
    (`engine.detect.DetectorRecord`), never to be loaded."""
    from engine.detect import DetectorRecord

    record = DetectorRecord(
        key=key,
        path=str(detectors / key / "detector.pt"),
        trained_on=f"fake {key}",
        model="yolov8n.yaml",
        image_size=64,
        epochs=1,
        n_films=4,
        n_train=3,
        n_held_out=1,
        n_knees=4,
        held_out=held,
        train_seconds=0.1,
        device="cpu",
        ultralytics_version="0",
        created_at=created_at,
    )
    (detectors / key).mkdir(parents=True)
    (detectors / key / "record.json").write_text(record.to_json())
    (detectors / key / "detector.pt").write_bytes(b"")
    return record


def phantom_film_placed(
    seed: int, index: int, *, scale: float, degrees: float, where: str
) -> np.ndarray:
    """Phantom film ``index`` of a 40-film phantom drawn as `render_film` draws it, but
    placed by hand: the knee box ``scale`` of the film's shorter side, turned ``degrees``,
    and pushed into a corner (``where``: 'low-left', 'low-right' or 'top')."""
    from engine.phantom import PhantomSpec, phantom_labels
    from engine.phantom.canvas import BOX_SIDE
    from engine.phantom.film import (
        box_half_extent,
        canvas_to_film,
        expose,
        finish,
        warp_to_film,
    )
    from engine.phantom.render import draw_film_knee

    spec = PhantomSpec(n_images=40, n_joint=20, seed=seed)
    row = phantom_labels(spec).iloc[index]
    h, w = spec.film_size
    att, canvas_mask, rng = draw_film_knee(spec, row)
    factor = scale * min(h, w) / BOX_SIDE
    theta = np.deg2rad(degrees)
    half = box_half_extent(factor, theta)
    cx = half + 3 if "left" in where else w - half - 3 if "right" in where else w / 2
    cy = h - half - 3 if "low" in where else half + 3
    m = canvas_to_film(factor, theta, (cx, cy), str(row["side"]))
    film_att, _ = warp_to_film(att, canvas_mask, m, spec.film_size)
    diff = spec.effective_difficulty
    return finish(expose(film_att, diff, rng), diff, rng)


def films_without_a_knee() -> dict[str, np.ndarray]:
    """Images that are no knee radiograph: pure noise, a flat grey, and a drawn chest-like
    film (two lung fields and ribs), each large enough to pass the size check."""
    import cv2

    rng = np.random.default_rng(0)
    chest = np.full((600, 500), 30, np.uint8)
    for centre in ((160, 300), (340, 300)):
        cv2.ellipse(chest, centre, (90, 200), 0, 0, 360, 200, -1)
    for y in range(120, 500, 40):
        cv2.line(chest, (60, y), (440, y), 240, 6)
    return {
        "noise": rng.integers(0, 256, (512, 512), dtype=np.uint8),
        "flat": np.full((512, 512), 128, np.uint8),
        "chest": chest,
    }
