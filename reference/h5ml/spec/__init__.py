"""The specification in code: constants, the issue-code registry, schemas, chunk rules, attribute encoding.

This layer is SPEC.md as data and small pure functions; it imports nothing of
h5ml but :mod:`h5ml.errors`. The package namespace is :mod:`h5ml.spec.constants`
(``from h5ml import spec; spec.FORMAT_NAME``); the other modules are imported
by name:

- :mod:`h5ml.spec.constants`: names, versions, encodings, attribute tables, limits (§1-§7);
- :mod:`h5ml.spec.codes`: the issue-code registry (§9.2);
- :mod:`h5ml.spec.schemas`: the JSON Schemas of ``schema/`` (§4.6, §9.3);
- :mod:`h5ml.spec.chunks`: chunk shapes and chunk-cache sizes (§7);
- :mod:`h5ml.spec.attrs`: HDF5 attributes stored and read as §3.4, §3.7 and §4.6 say.
"""

from h5ml.spec.constants import *  # noqa: F403
from h5ml.spec.constants import __all__ as __all__
