"""h5ml: a versioned format for machine-learning datasets in HDF5 (reference implementation).

The public API is this namespace; see SPEC.md for the format itself.
"""

from __future__ import annotations

from h5ml._version import __version__
from h5ml.errors import *  # noqa: F403
from h5ml.errors import __all__ as _errors_all

__all__ = ["__version__", *_errors_all]
