"""The data model shared by the reader, the writer and the validator.

- :mod:`h5ml.model.metadata`: typed root metadata (§4), checked against the root schema;
- :mod:`h5ml.model.layout`: a feature's stored form (encoding, dtype, shapes, attributes, §6);
- :mod:`h5ml.model.values`: the user's values (:class:`Categorical`, :class:`FeatureSpec`);
- :mod:`h5ml.model.fingerprint`: content fingerprints (§8);
- :mod:`h5ml.model.stats`: feature statistics (§6.7).

It imports :mod:`h5ml.spec` and :mod:`h5ml.errors` only.
"""

__all__: list[str] = []
