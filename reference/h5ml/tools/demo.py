"""The ``h5ml demo``: scikit-learn's bundled digits written as an h5ml file.

The demo is a sequence of steps, each a function of the demo file's path,
so that later steps (training a model with PyTorch or Keras) are appended
without touching the first ones:

1. :func:`build_digits` loads ``sklearn.datasets.load_digits`` (bundled with
   scikit-learn, no download), splits it 80/20 stratified with seed 0, and
   writes a conforming file (train 1437 samples, test 360).
2. The command line then validates the file and prints its inspect tree.
3. :func:`train_torch` trains a small PyTorch classifier on the file through
   the PyTorch adapter (the trainer is :mod:`h5ml_demo.torch_digits`) and
   returns the line the demo prints with the test accuracy. The core package
   never imports torch: the trainer is imported by name inside the function,
   and without torch the step is skipped with a line saying what to install.
4. :func:`train_keras` does the same with Keras 3 through the Keras adapter
   (:mod:`h5ml_demo.keras_digits`). Keras falls back to TensorFlow when
   ``KERAS_BACKEND`` is unset, so unless the user set it the demo picks an
   installed backend itself (:func:`keras_backend`: torch first).

scikit-learn is an optional dependency (``pip install "h5ml[demo]"``), and so
are PyTorch (``pip install "h5ml[torch]"``) and Keras (``"h5ml[keras]"``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import numpy as np

__all__ = [
    "CITATION",
    "CLASS_NAMES",
    "DESCRIPTION",
    "HOMEPAGE",
    "INSTALL_HINT",
    "KERAS_BACKENDS",
    "KERAS_INSTALL_HINT",
    "KERAS_TRAIN_MODULE",
    "KEYWORDS",
    "SEED",
    "TEST_FRACTION",
    "TORCH_INSTALL_HINT",
    "TORCH_TRAIN_MODULE",
    "VALIDATE_TIMEOUT_S",
    "build_digits",
    "keras_backend",
    "load_sklearn",
    "train_keras",
    "train_torch",
]

#: What to install when scikit-learn is missing.
INSTALL_HINT: Final = 'pip install "h5ml[demo]"'
#: What to install when PyTorch or the PyTorch adapter is missing.
TORCH_INSTALL_HINT: Final = 'pip install "h5ml[torch]"'
#: Module of the demo's PyTorch trainer (above the adapters; imported by name, never by the core).
TORCH_TRAIN_MODULE: Final = "h5ml_demo.torch_digits"
#: What to install when Keras is missing (with the torch backend).
KERAS_INSTALL_HINT: Final = 'pip install "h5ml[keras,torch]"'
#: Module of the demo's Keras trainer (imported by name, as the PyTorch one).
KERAS_TRAIN_MODULE: Final = "h5ml_demo.keras_digits"
#: Keras backends the demo may choose, in order of preference, when ``KERAS_BACKEND`` is unset.
KERAS_BACKENDS: Final = ("torch", "jax", "tensorflow")
#: Seed of the stratified split and of the shuffle on write (§7.6).
SEED: Final = 0
#: Fraction of the samples in the test split.
TEST_FRACTION: Final = 0.2
#: Seconds the demo allows the validator for its own file (§10.3).
VALIDATE_TIMEOUT_S: Final = 60.0
#: Class names of the label feature: the digits themselves (§6.5).
CLASS_NAMES: Final = tuple(str(d) for d in range(10))

DESCRIPTION: Final = (
    "Handwritten digits 0-9 as 8x8 images of pixel counts 0-16: the test set of the UCI 'Optical Recognition "
    "of Handwritten Digits' data (E. Alpaydin and C. Kaynak, 1998), as bundled by scikit-learn "
    "(sklearn.datasets.load_digits; 1797 images, 10 classes). Each pixel counts the on pixels in a 4x4 block "
    "of a 32x32 bitmap. Split 80/20 into train and test, stratified by class with seed 0. The UCI Machine "
    "Learning Repository distributes the data under the Creative Commons Attribution 4.0 license."
)
CITATION: Final = (
    "Alpaydin, E. and Kaynak, C. (1998). Optical Recognition of Handwritten Digits. "
    "UCI Machine Learning Repository. https://doi.org/10.24432/C50P49"
)
HOMEPAGE: Final = "https://archive.ics.uci.edu/dataset/80/optical+recognition+of+handwritten+digits"
KEYWORDS: Final = ("digits", "handwriting", "image classification", "uci", "scikit-learn")


def load_sklearn() -> tuple[ModuleType, ModuleType]:
    """Import the parts of scikit-learn the demo uses.

    Returns
    -------
    tuple of module
        ``(sklearn.datasets, sklearn.model_selection)``.

    Raises
    ------
    ModuleNotFoundError
        If scikit-learn is not installed; the message says
        ``pip install "h5ml[demo]"``.
    """
    try:
        datasets = importlib.import_module("sklearn.datasets")
        model_selection = importlib.import_module("sklearn.model_selection")
    except ImportError as exc:
        raise ModuleNotFoundError(
            f"the demo needs scikit-learn, which is not installed ({exc}); install it with: {INSTALL_HINT}",
            name="sklearn",
        ) from None
    return datasets, model_selection


def build_digits(path: str | Path = "digits.h5") -> Path:
    """Write scikit-learn's digits as an h5ml file with train and test splits (§4, §5, §6).

    Parameters
    ----------
    path
        The file to write; an existing file is replaced (the writer builds a
        temporary file beside it and renames it).

    Returns
    -------
    pathlib.Path
        ``path``.

    Notes
    -----
    Splits ``train`` (1437 samples) and ``test`` (360), stratified 80/20 with
    ``train_test_split(..., random_state=0)``. Features: ``image``, dense
    uint8 (N, 8, 8), values 0-16, role input; ``label``, categorical with
    class names ``"0" .. "9"``, role target. Root metadata: name ``digits``,
    description, license ``CC-BY-4.0``, citation, homepage, keywords,
    source. Samples are shuffled on write with seed 0 (§7.6) and compressed
    with gzip.

    Raises
    ------
    ModuleNotFoundError
        If scikit-learn is missing (see :func:`load_sklearn`).
    OSError
        If the file cannot be written.
    """
    from h5ml.writer import writer

    datasets, model_selection = load_sklearn()
    digits = datasets.load_digits()
    images = np.asarray(digits.images).astype(np.uint8)
    labels = np.asarray(digits.target).astype(np.int64)
    x_train, x_test, y_train, y_test = model_selection.train_test_split(
        images, labels, test_size=TEST_FRACTION, stratify=labels, random_state=SEED
    )
    sklearn_version = getattr(importlib.import_module("sklearn"), "__version__", "unknown")
    splits: dict[str, dict[str, Any]] = {
        split: {"image": x, "label": writer.Categorical(y, list(CLASS_NAMES))}
        for split, x, y in (("train", x_train, y_train), ("test", x_test, y_test))
    }
    metadata: dict[str, Any] = {
        "name": "digits",
        "description": DESCRIPTION,
        "license": "CC-BY-4.0",
        "citation": CITATION,
        "homepage": HOMEPAGE,
        "keywords": list(KEYWORDS),
        "source": f"sklearn.datasets.load_digits (scikit-learn {sklearn_version})",
    }
    features: dict[str, dict[str, Any]] = {
        "image": {
            "role": "input",
            "description": "8x8 image; each pixel counts the on pixels of a 4x4 block of a 32x32 bitmap",
            "units": "intensity 0-16",
        },
        "label": {"role": "target", "description": "the digit written"},
    }
    out = Path(path)
    writer.write(out, splits, metadata=metadata, compression="gzip", shuffle=True, seed=SEED, features=features)
    return out


def train_torch(path: str | Path) -> str:
    """Train a small PyTorch classifier on a digits file through the PyTorch adapter; return the line to print.

    Parameters
    ----------
    path
        A file written by :func:`build_digits`.

    Returns
    -------
    str
        ``"torch: test accuracy A after N epochs (S s)"`` (accuracy on the
        ``test`` split in ``[0, 1]``, seconds of wall-clock time; see
        :func:`h5ml_demo.torch_digits.train_digits`), or, when torch or the adapter
        cannot be imported, one line saying that training was skipped, why,
        and ``pip install "h5ml[torch]"``.

    Raises
    ------
    FileNotFoundError, h5ml.H5MLError, KeyError
        As :func:`h5ml_demo.torch_digits.train_digits`, if the file cannot be read
        or is not a digits file.

    Notes
    -----
    The adapter is imported here, never at module level, so that ``import
    h5ml`` loads no deep-learning framework (the core stays framework-free).
    """
    try:
        train = importlib.import_module(TORCH_TRAIN_MODULE)
    except ImportError as exc:
        return f"torch: training skipped, PyTorch is not available ({exc}); to train, install it with: {TORCH_INSTALL_HINT}"
    result = train.train_digits(path)
    return str(result.summary())


def keras_backend() -> str | None:
    """Return the Keras backend the demo uses: ``KERAS_BACKEND`` when set, else the first installed one.

    Returns
    -------
    str or None
        ``os.environ["KERAS_BACKEND"]`` if the user set it; else the first of
        :data:`KERAS_BACKENDS` whose package is installed (found without
        importing it); None when none is.
    """
    chosen = os.environ.get("KERAS_BACKEND")
    if chosen:
        return chosen
    for name in KERAS_BACKENDS:
        if importlib.util.find_spec(name) is not None:
            return name
    return None


def train_keras(path: str | Path) -> str:
    """Fit a small Keras classifier on a digits file through the Keras adapter; return the line to print.

    Parameters
    ----------
    path
        A file written by :func:`build_digits`.

    Returns
    -------
    str
        ``"keras (B backend): test accuracy A after N epochs (S s)"`` (see
        :func:`h5ml_demo.keras_digits.train_digits`), or one line saying that the
        step was skipped, why, and what to install.

    Raises
    ------
    FileNotFoundError, h5ml.H5MLError, KeyError
        As :func:`h5ml_demo.keras_digits.train_digits`.

    Notes
    -----
    Sets ``KERAS_BACKEND`` (when unset) before Keras is first imported:
    Keras reads it once, at import.
    """
    backend = keras_backend()
    if backend is None:
        return (
            f"keras: training skipped, no Keras backend is installed; to train, install one with: {KERAS_INSTALL_HINT}"
        )
    if importlib.util.find_spec("keras") is None:
        return f"keras: training skipped, Keras is not installed; to train, install it with: {KERAS_INSTALL_HINT}"
    os.environ.setdefault("KERAS_BACKEND", backend)
    try:
        train = importlib.import_module(KERAS_TRAIN_MODULE)
    except ImportError as exc:
        return f"keras: training skipped, Keras could not be imported ({exc}); to train: {KERAS_INSTALL_HINT}"
    result = train.train_digits(path)
    return str(result.summary())
