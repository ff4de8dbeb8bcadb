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
from dataclasses import dataclass
from typing import Final

import keras

from h5ml_keras.dataset import H5MLPyDataset

__all__ = ["BATCH_SIZE", "EPOCHS", "LEARNING_RATE", "SEED", "TrainResult", "make_model", "train_digits"]

#: Seed of the weights (``keras.utils.set_random_seed``) and of the adapter's shuffle.
SEED: Final = 0
#: Passes over the training split.
EPOCHS: Final = 10
#: Samples per batch, for training and evaluation.
BATCH_SIZE: Final = 32
#: Adam's learning rate.
LEARNING_RATE: Final = 3e-3
#: Largest pixel value of the digits images.
PIXEL_MAX: Final = 16.0
#: Units of the hidden layer.
HIDDEN: Final = 128


@dataclass(frozen=True)
class TrainResult:
    """What :func:`train_digits` measured.

    Attributes
    ----------
    accuracy
        Fraction of the test split classified correctly, in ``[0, 1]``.
    epochs
        Passes made over the training split.
    seconds
        Wall-clock time of training and evaluation, in seconds.
    backend
        The Keras backend that ran (``keras.backend.backend()``).
    losses
        Training loss (mean sparse categorical cross-entropy, nats) of each epoch.
    """

    accuracy: float
    epochs: int
    seconds: float
    backend: str
    losses: tuple[float, ...]

    def summary(self) -> str:
        """Return the one line the demo prints, e.g. ``keras (torch backend): test accuracy 0.950 after 10 epochs (2.1 s)``."""
        return (
            f"keras ({self.backend} backend): test accuracy {self.accuracy:.3f} after {self.epochs} epochs "
            f"({self.seconds:.1f} s)"
        )


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
        A file written by :func:`h5ml.demo.build_digits`: splits ``train`` and
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
        Test accuracy, epochs, seconds, backend and epoch losses.

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
        accuracy=float(accuracy),
        epochs=epochs,
        seconds=time.perf_counter() - start,
        backend=keras.backend.backend(),
        losses=tuple(float(v) for v in history.history["loss"]),
    )
