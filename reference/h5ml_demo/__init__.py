"""The training half of ``h5ml demo``: small classifiers fit on the digits file through both adapters.

The demo's first steps (writing scikit-learn's digits as an h5ml file,
validating it, printing its tree) are framework-free and live in
:mod:`h5ml.tools.demo`. Training needs PyTorch or Keras, which the core package
never imports, so it lives here, above the adapters: :mod:`h5ml.tools.demo`
imports :mod:`h5ml_demo.torch_digits` and :mod:`h5ml_demo.keras_digits` by name,
only when the demo trains, and says what to install when a framework is
missing. This module holds what both trainers share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

__all__ = ["HIDDEN", "LEARNING_RATE", "NUM_CLASSES", "PIXEL_MAX", "SEED", "TrainResult"]

#: Seed of the weight initialisation and of the sampler's ``"full"`` shuffle.
SEED: Final = 0
#: Adam's learning rate.
LEARNING_RATE: Final = 3e-3
#: Largest pixel value of the digits images (counts of on pixels in a 4x4 block).
PIXEL_MAX: Final = 16.0
#: Units of the hidden layer.
HIDDEN: Final = 128
#: Number of classes of the ``label`` feature.
NUM_CLASSES: Final = 10


@dataclass(frozen=True)
class TrainResult:
    """What a demo trainer measured.

    Attributes
    ----------
    framework
        What trained, as the demo prints it: ``"torch"`` or ``"keras (jax backend)"``.
    accuracy
        Fraction of the test split's samples classified correctly, in ``[0, 1]``.
    epochs
        Passes made over the training split.
    seconds
        Wall-clock time of training and evaluation, in seconds.
    train_samples, test_samples
        Samples in the two splits.
    losses
        Mean cross-entropy loss (nats per sample) of each training epoch.
    """

    framework: str
    accuracy: float
    epochs: int
    seconds: float
    train_samples: int
    test_samples: int
    losses: tuple[float, ...]

    def summary(self) -> str:
        """Return the one line the demo prints, e.g. ``torch: test accuracy 0.953 after 15 epochs (1.2 s)``."""
        return f"{self.framework}: test accuracy {self.accuracy:.3f} after {self.epochs} epochs ({self.seconds:.1f} s)"
