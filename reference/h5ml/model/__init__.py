"""The data model: what a file holds, and what every program checks about a file it opens.

What a file holds, for the writer and the converters (and the metadata for the reader too):

- :mod:`h5ml.model.metadata`: typed root metadata (§4), checked against the root schema;
- :mod:`h5ml.model.problems`: a root schema problem in words (§4.2, §4.6);
- :mod:`h5ml.model.new_root`: the root attributes a writer stores, and what HDF5 can hold (§4.2-§4.7);
- :mod:`h5ml.model.layout`: a feature's stored form (encoding, dtype, shapes, attributes, §6);
- :mod:`h5ml.model.values`: the user's values (:class:`Categorical`, :class:`FeatureSpec`, §3.3, §6.5);
- :mod:`h5ml.model.fingerprint`: content fingerprints (§8);
- :mod:`h5ml.model.stats`: feature statistics (§6.7).

What the reader and the writer's append mode decide alike about a file they did not write:

- :mod:`h5ml.model.header`: the root header, each split's sample count and each feature's encoding (§1.2-§1.5, §4.4, §5.3, §6.1);
- :mod:`h5ml.model.storage`: no external link, external storage or virtual dataset (§3.6, §10.1);
- :mod:`h5ml.model.hdf5`: attributes and members of any file, and the error for a file HDF5 cannot open;
- :mod:`h5ml.model.failures`: the HDF5 library failing on a file, one contract (§10.3);
- :mod:`h5ml.model.remote`: a file at a URL, read through fsspec (block cache, coalesced range requests).

It imports :mod:`h5ml.spec` and :mod:`h5ml.errors` only.
"""

__all__: list[str] = []
