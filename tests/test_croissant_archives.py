"""``h5ml convert`` of Croissant datasets whose files are inside local zip and tar archives.

Real archives written in tmp_path (PNG images, CSV files), the real CLI and
the real ``mlcroissant``: each conversion extracts into a folder of its own
(mlcroissant's cache is keyed by the archive's relative ``contentUrl``, not by
its content), and an archive's members are checked before anything is
extracted.
"""

from __future__ import annotations

import copy
import hashlib
import io
import stat
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import h5ml
from test_croissant_inputs import CONTEXT, cli, save

pytest.importorskip("mlcroissant")
Image = pytest.importorskip("PIL.Image")

#: Warnings of mlcroissant 1.1.1, not of our code: rdflib 7's ConjunctiveGraph, pandas' inplace keyword, and the
#: image files its reader opens and leaves to the garbage collector (field.py's ``open("rb").read()``).
pytestmark = [
    pytest.mark.filterwarnings("ignore:unclosed file:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:ConjunctiveGraph is deprecated:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:The inplace keyword in DataFrame.reset_index is deprecated"),
]


def png(value: int) -> bytes:
    """A 2x3 grey PNG image whose pixels all hold ``value``."""
    out = io.BytesIO()
    Image.fromarray(np.full((2, 3), value, dtype=np.uint8)).save(out, format="PNG")
    return out.getvalue()


def archive_croissant(folder: Path, archive: str, encoding: str, includes: str, data_type: str) -> dict[str, Any]:
    """A Croissant 1.1 document of the local archive ``archive``, with a FileSet of its members ``includes``."""
    if data_type == "sc:ImageObject":
        fields = [
            {
                "@type": "cr:Field",
                "@id": "rows/image",
                "name": "image",
                "dataType": "sc:ImageObject",
                "source": {"fileSet": {"@id": "members"}, "extract": {"fileProperty": "content"}},
            }
        ]
        member_format = "image/png"
    else:
        fields = [
            {
                "@type": "cr:Field",
                "@id": "rows/x",
                "name": "x",
                "dataType": data_type,
                "source": {"fileSet": {"@id": "members"}, "extract": {"column": "x"}},
            }
        ]
        member_format = "text/csv"
    return {
        "@context": dict(CONTEXT),
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.1",
        "name": "archived",
        "description": "Files in an archive.",
        "license": "CC0-1.0",
        "url": "https://example.org/archived",
        "distribution": [
            {
                "@type": "cr:FileObject",
                "@id": archive,
                "name": archive,
                "contentUrl": archive,
                "encodingFormat": encoding,
                "sha256": hashlib.sha256((folder / archive).read_bytes()).hexdigest(),
            },
            {
                "@type": "cr:FileSet",
                "@id": "members",
                "name": "members",
                "containedIn": {"@id": archive},
                "encodingFormat": member_format,
                "includes": includes,
            },
        ],
        "recordSet": [{"@type": "cr:RecordSet", "@id": "rows", "name": "rows", "field": fields}],
    }


def image_dataset(folder: Path, values: list[int]) -> Path:
    """``folder/imgs.zip`` of one PNG per value, and its Croissant ``folder/metadata.json``."""
    folder.mkdir()
    with zipfile.ZipFile(folder / "imgs.zip", "w") as archive:
        for index, value in enumerate(values):
            archive.writestr(f"imgs/{index}.png", png(value))
    doc = archive_croissant(folder, "imgs.zip", "application/zip", "imgs/*.png", "sc:ImageObject")
    return save(folder, doc, "metadata.json")


def images(path: Path) -> list[int]:
    """The value of each image of split ``train`` (its pixels all hold one value)."""
    with h5ml.open(path) as dataset:
        pixels = dataset["train"].read(slice(None))["image"]
    assert pixels.shape[1:] == (2, 3)
    assert all(len(set(image.ravel().tolist())) == 1 for image in pixels)
    return [int(image[0, 0]) for image in pixels]


def test_two_datasets_with_archives_of_one_name_each_convert_their_own_images(tmp_path: Path) -> None:
    """imgs.zip of A and imgs.zip of B: each conversion stores its own images (no shared extraction cache)."""
    first = image_dataset(tmp_path / "a", [10, 20])
    second = image_dataset(tmp_path / "b", [200, 100, 50])
    for source, out, expected in [(first, "a.h5", [10, 20]), (second, "b.h5", [50, 100, 200])]:
        code, _, err = cli("convert", str(source), str(tmp_path / out), "--split", "train")
        assert code == 0, err
        assert sorted(images(tmp_path / out)) == sorted(expected)
    code, _, err = cli("convert", str(first), str(tmp_path / "again.h5"), "--split", "train")
    assert code == 0, err
    assert sorted(images(tmp_path / "again.h5")) == [10, 20]


def test_a_stale_extraction_in_the_users_cache_is_neither_used_nor_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty folder left in mlcroissant's cache by a failed extraction of imgs.zip: not reused, not written to."""
    import mlcroissant._src.core.constants as constants
    import mlcroissant._src.operation_graph.operations.extract as extract

    users = tmp_path / "cache"
    stale = users / "extract" / hashlib.sha256(b"imgs.zip").hexdigest()
    stale.mkdir(parents=True)
    monkeypatch.setattr(constants, "EXTRACT_PATH", users / "extract")  # the user's cache, as mlcroissant has it
    monkeypatch.setattr(extract, "EXTRACT_PATH", users / "extract")
    source = image_dataset(tmp_path / "a", [7, 9])
    code, _, err = cli("convert", str(source), str(tmp_path / "a.h5"), "--split", "train")
    assert code == 0, err
    assert sorted(images(tmp_path / "a.h5")) == [7, 9]
    assert [p.relative_to(users) for p in users.rglob("*")] == [Path("extract"), stale.relative_to(users)]
    assert extract.EXTRACT_PATH == users / "extract" and constants.EXTRACT_PATH == users / "extract"


def _member(name: str, kind: str, target: str = "") -> tuple[tarfile.TarInfo, bytes | None]:
    member = tarfile.TarInfo(name)
    data: bytes | None = None
    if kind == "file":
        data = png(5)
        member.size = len(data)
    elif kind == "symlink":
        member.type, member.linkname = tarfile.SYMTYPE, target
    elif kind == "hardlink":
        member.type, member.linkname = tarfile.LNKTYPE, target
    elif kind == "fifo":
        member.type = tarfile.FIFOTYPE
    elif kind == "dir":
        member.type = tarfile.DIRTYPE
    return member, data


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> None:
    with tarfile.open(path, "w") as archive:
        for member, data in members:
            archive.addfile(member, None if data is None else io.BytesIO(data))


def _zip(path: Path, name: str, *, symlink_to: str | None = None) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo(name)
        if symlink_to is not None:
            info.external_attr = (stat.S_IFLNK | 0o777) << 16  # as `zip --symlinks` writes a link
        archive.writestr(info, symlink_to if symlink_to is not None else png(5))


def test_an_archive_of_plain_members_converts(tmp_path: Path) -> None:
    """A local tar of a folder of PNG files: its FileSet's images, as the members hold them."""
    folder = tmp_path / "meta"
    folder.mkdir()
    _tar(folder / "data.tar", [_member("imgs", "dir"), _member("imgs/a.png", "file"), _member("imgs/b.png", "file")])
    doc = archive_croissant(folder, "data.tar", "application/x-tar", "imgs/*.png", "sc:ImageObject")
    code, _, err = cli("convert", str(save(folder, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 0, err
    assert images(tmp_path / "o.h5") == [5, 5]


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("tar-symlink", "is a symbolic link"),
        ("tar-hardlink", "is a hard link"),
        ("tar-dotdot", "is an absolute path or a path with '..'"),
        ("tar-absolute", "is an absolute path or a path with '..'"),
        ("tar-fifo", "is neither a file nor a folder"),
        ("zip-symlink", "is a symbolic link"),
        ("zip-dotdot", "is an absolute path or a path with '..'"),
        ("zip-absolute", "is an absolute path or a path with '..'"),
    ],
)
def test_an_archive_member_that_could_land_outside_is_refused_before_extraction(
    tmp_path: Path, kind: str, said: str
) -> None:
    """A link to a file elsewhere, a '..' or absolute member, a FIFO: refused by archive and member, nothing read."""
    folder = tmp_path / "meta"
    folder.mkdir()
    secret = tmp_path / "secret.png"  # outside the JSON-LD's folder
    secret.write_bytes(png(66))
    archive, encoding = ("data.tar", "application/x-tar") if kind.startswith("tar") else ("data.zip", "application/zip")
    name = {"dotdot": "../a.png", "absolute": str(tmp_path / "a.png")}.get(kind.split("-")[1], "a.png")
    if kind in ("tar-symlink", "tar-hardlink"):
        _tar(folder / archive, [_member("b.png", "file"), _member(name, kind[4:], str(secret))])
    elif kind.startswith("tar"):
        _tar(folder / archive, [_member("b.png", "file"), _member(name, "fifo" if kind == "tar-fifo" else "file")])
    else:
        _zip(folder / archive, name, symlink_to=str(secret) if kind == "zip-symlink" else None)
    doc = archive_croissant(folder, archive, encoding, "*.png", "sc:ImageObject")
    args = ["convert", str(save(folder, doc)), str(tmp_path / "o.h5"), "--split", "train"]
    if kind == "tar-fifo":  # extracting a FIFO would block: in a child process with a time limit
        done = subprocess.run(
            [sys.executable, "-m", "h5ml", *args], capture_output=True, text=True, timeout=300, check=False
        )
        code, err = done.returncode, done.stderr
    else:
        code, _, err = cli(*args)
    assert code == 2 and "internal error" not in err, err
    assert f"cr:FileObject {archive!r} names the archive {folder / archive}, whose member {name!r} {said}" in err, err
    assert not (tmp_path / "o.h5").exists() and not (tmp_path / "a.png").exists()


def test_an_archive_inside_an_archive_is_refused(tmp_path: Path) -> None:
    """Its members cannot be checked before the outer archive is extracted: refused, saying what to do."""
    folder = tmp_path / "meta"
    folder.mkdir()
    _tar(folder / "outer.tar", [_member("inner.tar", "file")])
    doc = archive_croissant(folder, "outer.tar", "application/x-tar", "*.png", "sc:ImageObject")
    inner = copy.deepcopy(doc["distribution"][0])
    inner.update(
        {"@id": "inner.tar", "name": "inner.tar", "contentUrl": "inner.tar", "containedIn": {"@id": "outer.tar"}}
    )
    del inner["sha256"]
    doc["distribution"].insert(1, inner)
    doc["distribution"][2]["containedIn"] = {"@id": "inner.tar"}
    code, _, err = cli("convert", str(save(folder, doc)), str(tmp_path / "o.h5"), "--split", "train")
    assert code == 2 and "cr:FileObject 'inner.tar' holds other files and is itself contained in an archive" in err, err
    assert not (tmp_path / "o.h5").exists()
