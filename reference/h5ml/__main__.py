"""``python -m h5ml``: the same command line as the ``h5ml`` console script (see :mod:`h5ml.tools.cli`)."""

from __future__ import annotations

__all__: list[str] = []

if __name__ == "__main__":
    from h5ml.tools.entry import main

    main()
