"""Keras 3 adapter for h5ml files (``pip install "h5ml[keras]"``).

:class:`H5MLPyDataset` is a ``keras.utils.PyDataset`` over one split of a
file: pass it to ``model.fit``, ``evaluate`` or ``predict``. It imports
``keras`` only, never a backend, so it works under TensorFlow, JAX and
PyTorch; set ``KERAS_BACKEND`` before importing keras as usual. Orders,
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

from h5ml_keras.dataset import BatchTransform, H5MLPyDataset, Selection

__all__ = ["BatchTransform", "H5MLPyDataset", "Selection"]
