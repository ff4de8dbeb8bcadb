"""Keras 3 adapter for h5ml files (``pip install "h5ml[keras]"``).

:class:`H5MLPyDataset` is a ``keras.utils.PyDataset`` over one split of a
file: pass it to ``model.fit``, ``evaluate`` or ``predict``. It imports
``keras`` only, never a backend, so it works under TensorFlow, JAX and
PyTorch; set ``KERAS_BACKEND`` before importing keras as usual. When the
backend Keras is set to is not installed (tensorflow, the default without
``KERAS_BACKEND``), ``import h5ml_keras`` raises an ImportError saying how to
choose another (``KERAS_BACKEND=torch`` or ``jax``) or to install it. Orders,
shuffle modes, shards, epochs and resume states come from :mod:`h5ml.sampling`
and the batch arrays from :mod:`h5ml.sampling.batches`, the same as the
PyTorch adapter's (a resume state of one resumes the other)::

    import keras
    from h5ml_keras import H5MLPyDataset

    train = H5MLPyDataset("digits.h5", "train", batch_size=32, shuffle="full", seed=0)
    test = H5MLPyDataset("digits.h5", "test", batch_size=32)   # x, y from the features' roles
    model = keras.Sequential([keras.Input((8, 8)), keras.layers.Flatten(),
                              keras.layers.Dense(train.num_classes("label"), activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(train, validation_data=test, epochs=5, shuffle=False)
"""

from __future__ import annotations

import os

try:
    import keras  # noqa: F401 - imported here first, so that a backend that is not installed is said plainly
except ModuleNotFoundError as exc:  # Keras imports its backend's package at import time (tensorflow by default)
    _backend = (exc.name or "").partition(".")[0]
    if _backend not in ("tensorflow", "jax", "torch"):
        raise
    _chosen = os.environ.get("KERAS_BACKEND")
    raise ImportError(
        f"h5ml_keras: Keras is set to the {_backend} backend "
        + (f"(KERAS_BACKEND={_chosen})" if _chosen else "(KERAS_BACKEND is not set: keras.json's, or its default)")
        + f", but {_backend} is not installed. Choose an installed backend before keras is first imported: set "
        "KERAS_BACKEND=torch or KERAS_BACKEND=jax in the environment (or os.environ['KERAS_BACKEND'] = 'torch' at "
        f"the top of the script), or install the backend (pip install {_backend})"
    ) from exc

from h5ml_keras.dataset import BatchTransform, H5MLPyDataset, Selection

__all__ = ["BatchTransform", "H5MLPyDataset", "Selection"]
