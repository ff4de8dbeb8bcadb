"""``python -m h5ml``: the same command line as the ``h5ml`` console script (see :mod:`h5ml.cli`)."""

from __future__ import annotations

__all__: list[str] = []

if __name__ == "__main__":
    from h5ml.cli import main

    main()
