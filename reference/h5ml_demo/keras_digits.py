"""Train a small Keras classifier on the ``h5ml demo`` digits file through the Keras adapter.

Every batch, for ``model.fit`` and ``model.evaluate``, comes from
:class:`~h5ml_keras.dataset.H5MLPyDataset`, with the inputs and targets taken
from the features' ``role`` attributes, exactly as a user would. The model is
a one-hidden-layer perceptron on the 64 pixels (rescaled to ``[0, 1]`` by a
``Rescaling(1/16)`` layer, so the file's uint8 values are fed as they are).
``keras.utils.set_random_seed`` seeds the weights and the adapter's seed the
``"full"`` shuffle, so a run is reproducible on one machine and backend.
"""

from __future__ import annotations

import os
import time
from typing import Final

import keras

from h5ml_demo import HIDDEN, LEARNING_RATE, PIXEL_MAX, SEED, TrainResult
from h5ml_keras import H5MLPyDataset

__all__ = ["BATCH_SIZE", "EPOCHS", "make_model", "train_digits"]

#: Passes over the training split.
EPOCHS: Final = 10
#: Samples per batch, for training and evaluation.
BATCH_SIZE: Final = 32


def make_model(num_classes: int) -> keras.Model:
    """Return the demo's classifier for uint8 images (B, 8, 8): Rescaling(1/16), Flatten, Dense(128, relu), Dense(num_classes, softmax)."""
    return keras.Sequential(
        [
            keras.Input(shape=(8, 8)),
            keras.layers.Rescaling(1.0 / PIXEL_MAX),
            keras.layers.Flatten(),
            keras.layers.Dense(HIDDEN, activation="relu"),
            keras.layers.Dense(num_classes, activation="softmax"),
        ]
    )


def train_digits(
    path: str | os.PathLike[str],
    *,
    epochs: int = EPOCHS,
    batch_size: int = BATCH_SIZE,
    learning_rate: float = LEARNING_RATE,
    seed: int = SEED,
    workers: int = 1,
    use_multiprocessing: bool = False,
) -> TrainResult:
    """Fit :func:`make_model` on the ``train`` split of a digits file and evaluate it on ``test``.

    Parameters
    ----------
    path
        A file written by :func:`h5ml.tools.demo.build_digits`: splits ``train`` and
        ``test``, ``image`` (dense uint8 (N, 8, 8), role input) and ``label``
        (categorical, role target, §6.5).
    epochs
        Passes over the training split (>= 1), each in a new ``"full"`` order.
    batch_size
        Samples per batch (>= 1).
    learning_rate
        Adam's step size.
    seed
        Seeds the weights and the shuffle.
    workers, use_multiprocessing
        As ``keras.utils.PyDataset``, for the training split.

    Returns
    -------
    TrainResult
        Test accuracy, epochs, seconds, split sizes and epoch losses; ``framework`` names the backend.

    Raises
    ------
    ValueError
        If ``epochs`` < 1.
    KeyError
        If the file has no ``train`` or ``test`` split.
    FileNotFoundError, h5ml.H5MLError
        As :func:`h5ml.open`.

    Notes
    -----
    Changes the global random state of Python, numpy and the backend
    (``keras.utils.set_random_seed``).
    """
    if epochs < 1:
        raise ValueError(f"epochs must be >= 1, got {epochs}")
    start = time.perf_counter()
    keras.utils.set_random_seed(seed)
    train = H5MLPyDataset(
        path, "train", batch_size, shuffle="full", seed=seed, workers=workers, use_multiprocessing=use_multiprocessing
    )
    test = H5MLPyDataset(path, "test", batch_size)
    model = make_model(train.num_classes("label"))
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    history = model.fit(train, epochs=epochs, shuffle=False, verbose=0)
    _, accuracy = model.evaluate(test, verbose=0)
    return TrainResult(
        framework=f"keras ({keras.backend.backend()} backend)",
        accuracy=float(accuracy),
        epochs=epochs,
        seconds=time.perf_counter() - start,
        train_samples=train.sampler.num_samples,
        test_samples=test.sampler.num_samples,
        losses=tuple(float(v) for v in history.history["loss"]),
    )
