"""The version of this package (the version of the format it implements is ``h5ml.spec.FORMAT_VERSION``)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
