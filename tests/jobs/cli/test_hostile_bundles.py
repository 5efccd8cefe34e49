"""Hostile demo and study bundles (issue 23): code in a detector, changed files, zip bombs.

Each bundle here is built by hand, as an attacker would: no study is trained.
"""

from __future__ import annotations

import hashlib
import json
import struct
import tempfile
import tracemalloc
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from engine.detect.safe_load import UnsafeCheckpointError
from jobs.cli.main import main
from jobs.services.demo_bundle import (
    DEMO_BUNDLE_VERSION,
    DemoBundleError,
    fresh_demo_home,
    unpack_demo,
)
from store.bundle import read_card
from store.db import StoreError
from tests.helpers.films import fake_detector, phantom_film, png_bytes


class _Payload:
    """Unpickled with ``weights_only=False``, this runs Python that writes ``marker``."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('the payload ran')",))


def crafted_detector(folder: Path, marker: Path) -> None:
    """A trained detector's folder (a valid record) whose ``detector.pt`` is a payload."""
    fake_detector(folder.parent, folder.name, "2026-01-01T00:00:00+00:00")
    torch.save({"model": _Payload(marker), "epoch": -1}, folder / "detector.pt")


def demo_zip(
    out: Path,
    parts: dict[str, bytes],
    *,
    hashes: dict[str, str] | None = None,
    **fields: object,
) -> Path:
    """A demo bundle of ``parts`` (model, film, card, detector files) with a manifest whose
    hashes are right unless ``hashes`` overrides some; ``fields`` replace its fields."""
    manifest = {
        "format": "softgrade-demo",
        "version": DEMO_BUNDLE_VERSION,
        "study": {"study_id": "s1", "name": "hostile", "dataset_id": "d1"},
        "method": "beta",
        "tasks": ["KL"],
        "image_size": 32,
        "seeds": [0],
        "detector": {"name": "evil", "folder": "detector"},
        "models": [{"task": "KL", "seed": 0, "file": "models/KL-seed0.pt", "val_amae": 0.5}],
        "films": [
            {"image_id": "a", "file": "films/00.png", "kl": 1, "kl_true": None}
            | {"cppd": None, "cppd_true": None, "test_seeds": [0]}
        ],
        "sha256": {n: hashlib.sha256(b).hexdigest() for n, b in parts.items()} | (hashes or {}),
    } | fields
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for name, data in parts.items():
            zf.writestr(name, data)
    return out


def hostile_parts(tmp_path: Path, marker: Path) -> dict[str, bytes]:
    """The parts of a demo bundle whose detector is a crafted pickle."""
    crafted_detector(tmp_path / "made" / "evil", marker)
    return {
        "card.json": json.dumps({"card": {}, "notes": ""}).encode(),
        "models/KL-seed0.pt": b"never loaded here",
        "films/00.png": png_bytes(np.zeros((32, 32), np.uint8)),
        "detector/detector.pt": (tmp_path / "made" / "evil" / "detector.pt").read_bytes(),
        "detector/record.json": (tmp_path / "made" / "evil" / "record.json").read_bytes(),
    }


def test_a_bundle_detector_that_is_a_crafted_pickle_never_runs_when_an_upload_is_graded(
    tmp_path,
):
    from engine.demo_models import knee_to_grade  # what Grade a film calls for an uploaded film

    marker = tmp_path / "pwned"
    bundle = demo_zip(tmp_path / "demo.zip", hostile_parts(tmp_path, marker))
    demo = unpack_demo(bundle, tmp_path / "unpacked")  # its hashes are right: the attacker's
    refused: Exception | None = None
    try:
        knee_to_grade(phantom_film(), demo.detector_dir)
    except Exception as exc:
        refused = exc
    assert not marker.exists(), "the bundle's detector ran its code"
    assert isinstance(refused, UnsafeCheckpointError), refused
    assert "not a knee detector SoftGrade can load safely" in str(refused)


def test_up_demo_refuses_a_bundle_whose_detector_is_a_crafted_pickle_before_serving(
    tmp_path, capsys, monkeypatch
):
    # A temporary folder of this test's own: other tests (xdist workers) unpack demos too.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    marker = tmp_path / "pwned"
    bundle = demo_zip(tmp_path / "demo.zip", hostile_parts(tmp_path, marker))
    assert main(["up", "--demo", str(bundle), "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "its knee detector is refused" in err
    assert "Traceback" not in err and not marker.exists()
    homes = set(Path(tempfile.gettempdir()).glob("softgrade-demo-*"))
    with pytest.raises(DemoBundleError, match="knee detector is refused"):
        fresh_demo_home(bundle)
    assert set(Path(tempfile.gettempdir()).glob("softgrade-demo-*")) == homes  # removed
    assert not marker.exists()


def test_a_bundle_whose_file_differs_from_its_manifest_hash_is_refused_and_leaves_nothing(
    tmp_path,
):
    parts = hostile_parts(tmp_path, tmp_path / "pwned")
    changed = demo_zip(tmp_path / "changed.zip", parts, hashes={"detector/detector.pt": "0" * 64})
    unhashed = tmp_path / "unhashed.zip"
    with zipfile.ZipFile(changed) as zin, zipfile.ZipFile(unhashed, "w") as zout:
        manifest = json.loads(zin.read("manifest.json"))
        del manifest["sha256"]["films/00.png"]
        zout.writestr("manifest.json", json.dumps(manifest))
        for name in parts:
            zout.writestr(name, zin.read(name))
    cases = {
        changed: "detector/detector.pt does not match the hash in its manifest.json",
        unhashed: "has no hash for films/00.png",
    }
    for bad, words in cases.items():
        dest = tmp_path / f"out-{bad.stem}"
        with pytest.raises(DemoBundleError, match=words.replace(".", r"\.")):
            unpack_demo(bad, dest)
        assert not dest.exists()


def _zeros_zip(out: Path, name: str, mib: int, *, others: dict[str, bytes] | None = None) -> Path:
    """A zip whose ``name`` is ``mib`` MiB of zeros (a few hundred KiB packed)."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for other, data in (others or {}).items():
            zf.writestr(other, data)
        with zf.open(name, "w", force_zip64=True) as member:
            block = bytes(1 << 20)
            for _ in range(mib):
                member.write(block)
    return out


def _declare_size(bundle: Path, name: str, size: int) -> Path:
    """Rewrite the directory entry of ``name`` to declare ``size`` unpacked bytes (the
    member's data stays as it is): a 2 GiB entry without writing 2 GiB."""
    data = bytearray(bundle.read_bytes())
    with zipfile.ZipFile(bundle) as zf:
        names = [i.filename for i in zf.infolist()]
    at = 0
    for _ in names:
        at = data.index(b"PK\x01\x02", at)
        name_len = struct.unpack_from("<H", data, at + 28)[0]
        if data[at + 46 : at + 46 + name_len].decode() == name:
            struct.pack_into("<I", data, at + 24, size)  # uncompressed size
            break
        at += 46
    bundle.write_bytes(bytes(data))
    return bundle


def _refused_within(limit_mib: int, call, error: type[Exception], words: str) -> None:
    """``call()`` raises ``error`` naming ``words`` with at most ``limit_mib`` MiB allocated."""
    tracemalloc.start()
    try:
        with pytest.raises(error, match=words):
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit_mib * 2**20, f"{peak / 2**20:.0f} MiB allocated"


def test_a_demo_zip_bomb_is_refused_before_anything_is_unpacked(tmp_path):
    bomb = _zeros_zip(tmp_path / "bomb.zip", "films/00.png", 200)
    assert bomb.stat().st_size < 2 * 2**20
    dest = tmp_path / "out"
    _refused_within(20, lambda: unpack_demo(bomb, dest), DemoBundleError, "looks like a zip bomb")
    assert not dest.exists()

    declared = _declare_size(
        demo_zip(tmp_path / "huge.zip", hostile_parts(tmp_path, tmp_path / "m")),
        "films/00.png",
        2**31,
    )
    _refused_within(
        20, lambda: unpack_demo(declared, dest), DemoBundleError, "unpacks to 2,048 MiB"
    )
    assert not dest.exists()


def test_up_demo_with_a_zip_bomb_exits_with_one_line(tmp_path, capsys):
    bomb = _zeros_zip(tmp_path / "bomb.zip", "films/00.png", 200)
    assert main(["up", "--demo", str(bomb)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "zip bomb" in err and "Traceback" not in err


def test_a_study_bundle_zip_bomb_is_refused_before_anything_is_unpacked(tmp_path, store):
    from store.bundle import import_study

    tables = ("runs", "predictions", "epochs", "images", "labels", "splits", "split_rules")
    others = {"card.json": b'{"bundle_version": 1}'}
    others |= {f"{t}.parquet": b"x" for t in tables if t != "predictions"}
    bomb = _zeros_zip(tmp_path / "study.zip", "predictions.parquet", 200, others=others)
    _refused_within(20, lambda: read_card(bomb), StoreError, "looks like a zip bomb")
    _refused_within(20, lambda: import_study(bomb, path=store), StoreError, "zip bomb")


def _study_zip(out: Path, card: bytes, table: bytes = b"not parquet") -> Path:
    tables = ("runs", "predictions", "epochs", "images", "labels", "splits", "split_rules")
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("card.json", card)
        for t in tables:
            zf.writestr(f"{t}.parquet", table)
    return out


def test_malformed_study_bundles_get_one_message_from_import_study(tmp_path, home, capsys):
    from store.db import default_store_path, init_schema

    init_schema(default_store_path())
    reference = read_card(Path(__file__).parents[3] / "store" / "examples" / "reference-study.zip")
    cases = {
        _study_zip(tmp_path / "nojson.zip", b"{not json"): "card.json is not readable JSON",
        _study_zip(
            tmp_path / "fields.zip", json.dumps({"bundle_version": 1, "seeds": ["a"]}).encode()
        ): "lacks or mistypes study (dict), dataset (dict)",
        _study_zip(tmp_path / "tables.zip", json.dumps(reference).encode()): (
            "its tables cannot be imported"
        ),
    }
    for bad, words in cases.items():
        assert main(["import-study", str(bad)]) == 2, bad
        err = capsys.readouterr().err
        assert err.startswith("error: ") and words in err and "Traceback" not in err, err


def test_a_study_bundle_table_that_differs_from_its_card_hash_is_refused(tmp_path, store):
    from store.bundle import import_study

    reference = Path(__file__).parents[3] / "store" / "examples" / "reference-study.zip"
    changed = tmp_path / "changed.zip"
    with zipfile.ZipFile(reference) as zin, zipfile.ZipFile(changed, "w") as zout:
        card = json.loads(zin.read("card.json"))
        names = [n for n in zin.namelist() if n != "card.json"]
        card["sha256"] = {n: hashlib.sha256(zin.read(n)).hexdigest() for n in names}
        card["sha256"]["runs.parquet"] = "0" * 64
        zout.writestr("card.json", json.dumps(card))
        for name in names:
            zout.writestr(name, zin.read(name))
    with pytest.raises(StoreError, match="runs.parquet does not match the hash in its card"):
        import_study(changed, path=store)
    from store.db import connect

    with connect(store, read_only=True) as con:
        assert con.execute("SELECT count(*) FROM studies").fetchone()[0] == 0


# -- issue 31: every number a bundle carries, and its films --------------------------------------


def plain_parts() -> dict[str, bytes]:
    """A demo bundle's parts with no trained detector (the classical one is code)."""
    return {
        "card.json": json.dumps({"card": {}, "notes": ""}).encode(),
        "models/KL-seed0.pt": b"never loaded here",
        "films/00.png": png_bytes(np.zeros((32, 32), np.uint8)),
    }


def _film(**cells: object) -> dict[str, object]:
    film = {"image_id": "a", "file": "films/00.png", "kl": 1, "kl_true": None}
    return film | {"cppd": None, "cppd_true": None, "test_seeds": [0]} | cells


def _model(**cells: object) -> dict[str, object]:
    return {"task": "KL", "seed": 0, "file": "models/KL-seed0.pt", "val_amae": 0.5} | cells


CLASSICAL = {"name": "classical", "folder": None}
NOISE = np.random.default_rng(0).integers(0, 256, (32, 32), dtype=np.uint8)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"image_size": 100_000}, "image_size 100000: a whole number of px from 16 to 1024"),
        ({"image_size": 8}, "image_size 8"),
        ({"image_size": "32"}, "image_size '32'"),
        ({"image_size": 32.5}, "image_size 32.5"),
        ({"films": [_film(kl=7)]}, "kl 7 must be a whole number 0 to 4 or empty"),
        ({"films": [_film(cppd_true=-1)]}, "cppd_true -1 must be a whole number 0 to 3"),
        ({"films": [_film(kl=True)]}, "kl True"),
        ({"films": [_film(test_seeds=[3])]}, "test_seeds [3] must be among the seeds"),
        ({"films": [_film(image_id="knee\u202egnp.png")]}, "control characters (U+202E)"),
        ({"models": [_model(val_amae=float("nan"))]}, "val_amae nan must be a number from 0"),
        ({"models": [_model(val_amae=1e9)]}, "val_amae 1000000000.0"),
        ({"models": [_model(), _model()]}, "a second model of KL, seed 0"),
        ({"models": [_model(set_thresholds=[0.5])]}, "set_thresholds [0.5] must be 5 numbers"),
        ({"models": [_model(set_thresholds=[0.5] * 4 + [9])]}, "from 0 to 1 (or null"),
        ({"grade_sets": {"score": "x", "coverage": 2}}, "grade_sets {'score': 'x'"),
        ({"seeds": [-1]}, "seeds [-1]: one or more whole numbers from 0"),
        ({"seeds": [0, 0]}, "seeds [0, 0]: each seed once"),
        ({"tasks": ["XX"]}, "tasks ['XX']"),
        ({"method": "no-such-method"}, "method 'no-such-method'"),
        ({"detector": {"name": 7, "folder": None}}, "detector: a name"),
        ({"study": {"study_id": "s1"}}, "study: its study_id and name, as text"),
    ],
)
def test_every_number_a_demo_bundle_carries_is_held_to_softgrade_limits(tmp_path, fields, words):
    bundle = demo_zip(tmp_path / "demo.zip", plain_parts(), **({"detector": CLASSICAL} | fields))
    dest = tmp_path / "out"
    with pytest.raises(DemoBundleError, match="manifest.json is refused") as refused:
        unpack_demo(bundle, dest)
    assert words in str(refused.value) and "export-demo" in str(refused.value)
    assert not dest.exists()


def test_a_plain_hand_built_demo_bundle_still_opens(tmp_path):
    demo = unpack_demo(
        demo_zip(tmp_path / "demo.zip", plain_parts(), detector=CLASSICAL), tmp_path / "out"
    )
    assert demo.image_size == 32 and demo.films["kl"].tolist() == [1]


def test_a_crop_far_larger_than_the_bundles_image_size_is_refused_unread(tmp_path):
    # 8000 x 8000 px of zeros: a PNG of ~60 KB that each view decoded whole (4 GB asked).
    parts = plain_parts() | {"films/00.png": png_bytes(np.zeros((8000, 8000), np.uint8))}
    bundle = demo_zip(tmp_path / "demo.zip", parts, detector=CLASSICAL)
    dest = tmp_path / "out"
    _refused_within(
        20,
        lambda: unpack_demo(bundle, dest),
        DemoBundleError,
        r"films/00.png \(image a\) is refused: a 8000 x 8000 px crop; the bundle's models see "
        r"32 x 32 px",
    )
    assert not dest.exists()


@pytest.mark.parametrize(
    ("film", "words"),
    [
        (png_bytes(NOISE)[: len(png_bytes(NOISE)) // 2], "not a PNG image SoftGrade can read"),
        (b"GIF89a" + bytes(40), "not a PNG image SoftGrade can read"),
        (png_bytes(np.zeros((32, 32, 3), np.uint8)), "not a grey PNG crop"),
    ],
)
def test_a_malformed_film_in_a_bundle_is_named_in_one_message(tmp_path, capsys, film, words):
    parts = plain_parts() | {"films/00.png": film}
    bundle = demo_zip(tmp_path / "demo.zip", parts, detector=CLASSICAL)
    with pytest.raises(DemoBundleError, match=r"its film films/00.png \(image a\) is refused"):
        unpack_demo(bundle, tmp_path / "out")
    assert main(["up", "--demo", str(bundle), "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "films/00.png" in err and words in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_bundled_detector_whose_record_sizes_inference_past_the_caps_is_refused(tmp_path):
    parts = hostile_parts(tmp_path, tmp_path / "pwned")
    record = json.loads(parts["detector/record.json"])
    for size, words in ((100_000, "over the 50 M px a film may have"), (50, "multiple of 32")):
        parts["detector/record.json"] = json.dumps(record | {"image_size": size}).encode()
        bundle = demo_zip(tmp_path / f"demo-{size}.zip", parts)
        with pytest.raises(DemoBundleError, match="its knee detector is refused") as refused:
            unpack_demo(bundle, tmp_path / f"out-{size}")
        assert words in str(refused.value)


def test_the_kiosk_names_a_film_damaged_after_unpacking_instead_of_an_error_box(
    tmp_path, monkeypatch
):
    from streamlit.testing.v1 import AppTest

    from jobs.services.kiosk import KioskSettings

    home = tmp_path / "home"
    demo = unpack_demo(
        demo_zip(tmp_path / "demo.zip", plain_parts(), detector=CLASSICAL), home / "demo"
    )
    (demo.folder / "films" / "00.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(30))
    monkeypatch.setenv("SOFTGRADE_HOME", str(home))
    for name, value in KioskSettings(demo_dir=demo.folder).env().items():
        monkeypatch.setenv(name, value)
    app = Path(__file__).parents[3] / "app.py"
    at = AppTest.from_file(str(app), default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any("00.png is refused" in e and "not a PNG image" in e for e in errors), errors
