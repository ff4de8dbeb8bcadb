"""Test helper: the hostile corpus of issue 14, built in a folder beside a secret file no output may contain.

:func:`make_secret` writes ``secret.bin`` (4 KiB of ``SECRET-<seeded hex>``)
and ``secret.h5`` (the same bytes as one ``uint8`` dataset ``/data`` of shape
(256, 16)); :class:`Secret` tells whether some bytes or text hold any of it,
as raw bytes or as the decimal numbers a text output would print. Each
builder of :data:`H5ML_KINDS` writes an h5ml file (plain h5py, laid out as
SPEC.md says, :mod:`_files`) that tries one attack of issue 14 (items 1 and
4-8); each of :data:`FOREIGN_KINDS` writes a source that ``h5ml convert``
accepts (the tutorial ``x_train``/``y_train`` layout, one group per sample)
with one attack in it. Every builder returns the path of the file.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import h5py
import numpy as np

from _files import Categorical, Dense, Ragged, write_file
from h5ml.spec.attrs import write_attr

__all__ = ["CONTROL", "FOREIGN_KINDS", "H5ML_KINDS", "ROWS", "Secret", "clean_file", "make_secret"]

#: Rows of the secret as a (ROWS, 16) uint8 array: 4 KiB.
ROWS: Final = 256
_WIDTH: Final = 16
#: Control sequences a hostile name carries: set the window title, clear the screen.
CONTROL: Final = "\x1b]0;pwned\x07\x1b[2J"


@dataclass(frozen=True)
class Secret:
    """The secret file's marker and where it lies (``folder/secret.bin``, ``folder/secret.h5``)."""

    marker: bytes
    folder: Path

    @property
    def data(self) -> bytes:
        """The secret's 4 KiB."""
        return (self.marker * (4096 // len(self.marker) + 1))[:4096]

    def leaked(self, blob: bytes | str) -> int:
        """Bytes of the secret found in ``blob``: the marker as bytes or text, or its first bytes as decimals."""
        raw = blob.encode("utf-8", "replace") if isinstance(blob, str) else blob
        count = raw.count(self.marker) * len(self.marker)
        decimals = rb"\D{1,6}".join(str(b).encode() for b in self.marker[:12])
        count += len(re.findall(decimals, raw)) * 12
        return count


def make_secret(folder: Path, seed: int = 14) -> Secret:
    """Write ``secret.bin`` and ``secret.h5`` in ``folder``: 4 KiB of ``SECRET-<16 seeded hex digits>``."""
    marker = f"SECRET-{random.Random(seed).getrandbits(64):016x}".encode()
    secret = Secret(marker, folder)
    (folder / "secret.bin").write_bytes(secret.data)
    with h5py.File(folder / "secret.h5", "w") as f:
        f["data"] = np.frombuffer(secret.data, dtype=np.uint8).reshape(ROWS, _WIDTH)
    return secret


#: What makes a dataset (or a link) of a given name in a group.
_Maker = Callable[[h5py.Group, str], "h5py.Dataset | None"]


def _features(n: int = ROWS) -> dict[str, Dense | Categorical | Ragged]:
    rng = np.random.default_rng(7)
    return {
        "x": Dense(rng.integers(0, 50, (n, _WIDTH), dtype=np.uint8)),
        "y": Categorical(np.arange(n) % 2, ["a", "b"]),
        "r": Ragged([np.full(_WIDTH, i % 50, dtype=np.uint8) for i in range(n)]),
    }


def clean_file(path: Path) -> Path:
    """A valid h5ml file with splits train and test (features x, y, r), none of the secret in it."""
    return write_file(path, {"train": _features(), "test": _features(8)})


def _replace(f: h5py.File, where: str, make: _Maker) -> None:
    """Replace the dense dataset ``where`` by what ``make`` creates, keeping its attributes."""
    attrs = dict(f[where].attrs)
    parent, name = where.rsplit("/", 1)
    del f[where]
    made = make(f[parent or "/"], name)
    if made is not None:
        for key, value in attrs.items():
            made.attrs[key] = value


def _secret_bytes(secret: Secret) -> np.ndarray:
    return np.frombuffer(secret.data, dtype=np.uint8).reshape(ROWS, _WIDTH)


def _h5ml(secret: Secret, name: str, edit: Callable[[h5py.File], None], **options: object) -> Path:
    path = secret.folder / f"{name}.h5"
    write_file(path, {"train": _features(), "test": _features(8)}, extra=edit, **options)  # type: ignore[arg-type]
    return path


def _external_storage(secret: Secret) -> Callable[[h5py.Group, str], h5py.Dataset]:
    target = str(secret.folder / "secret.bin")
    return lambda g, n: g.create_dataset(n, (ROWS, _WIDTH), np.uint8, external=[(target, 0, 4096)])


def _virtual(secret: Secret) -> Callable[[h5py.Group, str], h5py.Dataset]:
    def make(group: h5py.Group, name: str) -> h5py.Dataset:
        layout = h5py.VirtualLayout((ROWS, _WIDTH), np.uint8)
        layout[:] = h5py.VirtualSource(str(secret.folder / "secret.h5"), "data", shape=(ROWS, _WIDTH))
        return group.create_virtual_dataset(name, layout)

    return make


def _external_link(secret: Secret) -> Callable[[h5py.Group, str], None]:
    def make(group: h5py.Group, name: str) -> None:
        group[name] = h5py.ExternalLink(str(secret.folder / "secret.h5"), "/data")

    return make


def _hidden(f: h5py.File, secret: Secret) -> None:
    """A dataset that no split names, holding the secret (what a soft link may point to)."""
    f.create_group("_hidden")["x"] = _secret_bytes(secret)
    f["_hidden/values"] = np.frombuffer(secret.data, dtype=np.uint8)
    write_attr(f["_hidden/x"], "encoding", "dense")
    write_attr(f["_hidden/x"], "encoding_version", "1.0")


def _soft_link(secret: Secret, where: str, target: str) -> Callable[[h5py.File], None]:
    """Replace the component ``where`` by a soft link to ``target``, a hidden dataset holding the secret."""

    def edit(f: h5py.File) -> None:
        _hidden(f, secret)
        del f[where]
        f[where] = h5py.SoftLink(target)

    return edit


def _soft_split(secret: Secret) -> Callable[[h5py.File], None]:
    def edit(f: h5py.File) -> None:
        f.move("test", "_test")
        f["_test/x"][:8] = _secret_bytes(secret)[:8]
        f["test"] = h5py.SoftLink("/_test")

    return edit


def _edit_h5ml(secret: Secret, make: Callable[[Secret], _Maker], where: str) -> Callable[[h5py.File], None]:
    """An edit that replaces the dataset ``where`` by what ``make(secret)`` creates."""
    return lambda f: _replace(f, where, make(secret))


def _damaged(f: h5py.File) -> None:
    """E122: the feature ``x`` holds half the split's samples."""
    _replace(f, "/train/x", lambda g, n: g.create_dataset(n, data=np.zeros((ROWS // 2, _WIDTH), np.uint8)))


def _missing_filter() -> int:
    """A registered filter id that this HDF5 build cannot decode: blosc, zstd, lz4, bitshuffle, blosc2, or
    (once hdf5plugin is loaded, as tests/test_zstd.py does, and decodes those) LZO, Snappy, JPEG-LS, which it
    does not provide."""
    candidates = (32001, 32015, 32004, 32008, 32026, 305, 32003, 32012)
    return next(fid for fid in candidates if not h5py.h5z.filter_avail(fid))


def _huge(f: h5py.File) -> None:
    """A split declaring 2**28 samples of which nothing is written (issue 14, item 4)."""
    del f["test"]
    group = f.create_group("test")
    dset = group.create_dataset("x", (2**28, _WIDTH), np.uint8, chunks=(4096, _WIDTH))
    write_attr(dset, "encoding", "dense")
    write_attr(dset, "encoding_version", "1.0")
    write_attr(group, "num_samples", 2**28)


def _h5ml_kinds() -> dict[str, Callable[[Secret], Path]]:
    return {
        "external link as a feature": lambda s: _h5ml(s, "ext_link", _edit_h5ml(s, _external_link, "/train/x")),
        "external link outside the splits": lambda s: _h5ml(
            s, "ext_link_extra", lambda f: _external_link(s)(f.create_group("_extra"), "leak")
        ),
        "external raw storage as a feature": lambda s: _h5ml(
            s, "ext_storage", _edit_h5ml(s, _external_storage, "/train/x")
        ),
        "external raw storage outside the splits": lambda s: _h5ml(
            s, "ext_storage_extra", lambda f: _external_storage(s)(f.create_group("_extra"), "leak")
        ),
        "virtual dataset as a feature": lambda s: _h5ml(s, "virtual", _edit_h5ml(s, _virtual, "/train/x")),
        "soft link as a ragged feature's values": lambda s: _h5ml(
            s, "soft_values", _soft_link(s, "train/r/values", "/_hidden/values")
        ),
        "soft link to a hidden dataset as a feature": lambda s: _h5ml(
            s, "soft_feature", _soft_link(s, "train/x", "/_hidden/x")
        ),
        "soft-linked split": lambda s: _h5ml(s, "soft_split", _soft_split(s)),
        "damaged feature (E122)": lambda s: _h5ml(s, "damaged", _damaged),
        "required filter not installed": lambda s: _h5ml(
            s, "required_filter", lambda f: write_attr(f, "required_filters", [_missing_filter()])
        ),
        "control characters in name and description": lambda s: _h5ml(
            s, "control", lambda f: None, root={"name": f"n{CONTROL}", "description": f"d{CONTROL}"}
        ),
        "huge declared shape, nothing written": lambda s: _h5ml(s, "huge", _huge),
    }


#: Kind -> builder of an h5ml file that tries it.
H5ML_KINDS: Final = _h5ml_kinds()


def _soft_to_hidden(secret: Secret) -> Callable[[h5py.Group, str], None]:
    """A soft link to ``/_hidden``, a dataset of the same file holding the secret."""

    def make(group: h5py.Group, name: str) -> None:
        group.file["_hidden"] = _secret_bytes(secret)
        group[name] = h5py.SoftLink("/_hidden")

    return make


def _tutorial(secret: Secret, name: str, x: _Maker) -> Path:
    """The tutorial layout: ``x_train`` (256, 16), made by ``x``, and ``y_train``."""
    path = secret.folder / f"{name}.h5"
    with h5py.File(path, "w") as f:
        f["y_train"] = np.arange(ROWS) % 2
        x(f, "x_train")
    return path


def _per_sample(secret: Secret, name: str, x: _Maker) -> Path:
    """One group per sample (``/<i>/x``, ``/<i>/label``); sample 3's ``x`` is made by ``x``."""
    path = secret.folder / f"{name}.h5"
    with h5py.File(path, "w") as f:
        for i in range(8):
            group = f.create_group(str(i))
            group["label"] = np.int64(i % 2)
            if i == 3:
                x(group, "x")
            else:
                group["x"] = np.full((ROWS, _WIDTH), i, dtype=np.uint8)
    return path


def _foreign_kinds() -> dict[str, Callable[[Secret], Path]]:
    out: dict[str, Callable[[Secret], Path]] = {}
    for layout, build in (("tutorial", _tutorial), ("per-sample", _per_sample)):
        for attack, make in (
            ("external raw storage", _external_storage),
            ("virtual dataset", _virtual),
            ("external link", _external_link),
            ("soft link", _soft_to_hidden),
        ):
            stem = f"{layout}_{attack}".replace(" ", "_").replace("-", "_")
            out[f"{layout} layout, {attack}"] = (
                lambda s, b=build, m=make, n=stem: b(s, n, m(s))  # type: ignore[misc]
            )
    return out


#: Kind -> builder of a foreign source (what ``h5ml convert`` reads) that tries it.
FOREIGN_KINDS: Final = _foreign_kinds()
