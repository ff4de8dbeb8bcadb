"""The issue-code registry of SPEC.md §9.2.

Codes are stable and never reused: a code that is retired stays in this table
with ``retired=True``. The letter gives the severity (E error = a MUST broken,
W warning = a SHOULD not followed, I info), the number is unique across
severities. ``clause`` is the SPEC clause the code enforces.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final

__all__ = ["CODES", "Code", "Severity", "by_name"]


class Severity(enum.StrEnum):
    """Severity of an issue (§9.1)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Code:
    """One entry of the registry (§9.2).

    Attributes
    ----------
    code
        The stable code, for example ``"E106"``.
    name
        A short snake_case name, stable too.
    severity
        error, warning or info.
    clause
        The SPEC clause enforced, for example ``"§4.4"``.
    summary
        One sentence saying what the issue means.
    deep
        True when only a deep validation (which reads sample data) can find it.
    """

    code: str
    name: str
    severity: Severity
    clause: str
    summary: str
    deep: bool = False
    retired: bool = False


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

_TABLE: Final = [
    # -- the file itself -------------------------------------------------
    Code(
        "E100",
        "not_hdf5",
        _E,
        "§3.1",
        "The file cannot be opened as HDF5: empty, truncated, not HDF5, or not a regular file (directory, FIFO, device, link loop).",
    ),
    Code(
        "E101",
        "unreadable",
        _E,
        "§10.3",
        "The HDF5 library failed or did not finish within the time limit while reading the file.",
    ),
    Code(
        "E102", "not_h5ml", _E, "§4.1", "The file is HDF5 but its root attribute 'format' is missing or is not 'h5ml'."
    ),
    Code(
        "E103",
        "format_version_invalid",
        _E,
        "§1.2",
        "The root attribute 'format_version' is missing or not a MAJOR.MINOR string.",
    ),
    Code(
        "E104",
        "format_major_unsupported",
        _E,
        "§1.3",
        "The file's format MAJOR version is not one this validator implements.",
    ),
    Code(
        "E105",
        "must_understand_unknown",
        _E,
        "§1.5",
        "'must_understand' names an extension this implementation does not know.",
    ),
    Code("E106", "incomplete", _E, "§4.4", "The completion marker is missing: the writer did not finish the file."),
    Code(
        "E107",
        "root_attribute_invalid",
        _E,
        "§4.2",
        "A root attribute does not satisfy the metadata schema (wrong type or value).",
    ),
    Code("E108", "root_attribute_missing", _E, "§4.2", "A required root attribute is missing."),
    Code("E109", "superblock_too_new", _E, "§3.1", "The file's superblock version is newer than HDF5 1.10 can read."),
    # -- storage profile ---------------------------------------------------
    Code("E110", "external_link", _E, "§3.6", "The file contains an external link."),
    Code("E111", "external_storage", _E, "§3.6", "A dataset stores its raw data in an external file."),
    Code("E112", "virtual_dataset", _E, "§3.6", "A dataset is a virtual dataset."),
    Code(
        "E113",
        "forbidden_dtype",
        _E,
        "§3.2",
        "A dataset or attribute has a datatype outside the storage profile (compound, opaque, reference, enum, array, ...).",
    ),
    Code(
        "E114",
        "undeclared_filter",
        _E,
        "§3.5",
        "A dataset uses a non-core filter that the root attribute 'required_filters' does not declare.",
    ),
    Code(
        "E115",
        "soft_link",
        _E,
        "§3.6",
        "The file contains a soft link; every object must be reached by hard links only.",
    ),
    Code("E116", "attribute_not_scalar", _E, "§3.7", "A single-valued attribute is stored in a non-scalar dataspace."),
    Code(
        "E117",
        "attribute_type_invalid",
        _E,
        "§6.1",
        "A split or feature attribute defined by the spec has the wrong type or value.",
    ),
    Code(
        "E118",
        "view_source_outside",
        _E,
        "§12.6",
        "A virtual dataset of a view file maps data from outside the dataset: an absolute path, '..', a scheme, "
        "a file the index does not list for its split, a missing shard, or a source stored outside its shard.",
    ),
    Code(
        "E119",
        "view_invalid",
        _E,
        "§12.6",
        "A view file's marker or index is wrong (stale index fingerprint), or a virtual dataset's mapping is not "
        "exactly the concatenation of its split's shards.",
    ),
    # -- layout ------------------------------------------------------------
    Code("E120", "invalid_name", _E, "§5.1", "A split or feature name breaks the naming rule."),
    Code("E121", "num_samples_invalid", _E, "§5.3", "A split lacks 'num_samples' or it is not a non-negative integer."),
    Code(
        "E122",
        "sample_count_mismatch",
        _E,
        "§5.3",
        "A feature's number of samples differs from its split's 'num_samples'.",
    ),
    Code(
        "E123",
        "split_not_group",
        _E,
        "§5.1",
        "A dataset at the root whose name is not reserved: a split must be a group.",
    ),
    # -- encodings ---------------------------------------------------------
    Code("E130", "encoding_missing", _E, "§6.1", "A feature lacks the 'encoding' or 'encoding_version' attribute."),
    Code("E131", "encoding_unknown", _E, "§6.1", "A feature's encoding is not one this version defines."),
    Code(
        "E132",
        "encoding_version_unsupported",
        _E,
        "§6.1",
        "A feature's encoding_version has a MAJOR this implementation does not read.",
    ),
    Code(
        "E133",
        "encoding_structure",
        _E,
        "§6",
        "A feature's HDF5 objects do not have the structure its encoding requires (members, shapes, dtypes).",
    ),
    Code("E134", "class_names_invalid", _E, "§6.5", "Class names are not unique non-empty strings."),
    Code(
        "E140",
        "offsets_invalid",
        _E,
        "§6.3",
        "Ragged or bytes offsets do not start at 0, decrease, or do not end at the number of values.",
        deep=True,
    ),
    Code(
        "E141",
        "code_out_of_range",
        _E,
        "§6.5",
        "A categorical code is below -1 or not less than the number of class names.",
        deep=True,
    ),
    Code("E142", "bool_value_invalid", _E, "§3.3", "A boolean feature holds a value other than 0 and 1.", deep=True),
    Code(
        "E143",
        "shapes_mismatch",
        _E,
        "§6.3",
        "A ragged sample's declared shape does not match its number of values.",
        deep=True,
    ),
    Code("E144", "string_invalid_utf8", _E, "§3.4", "A string value is not valid UTF-8.", deep=True),
    Code(
        "E145",
        "data_unreadable",
        _E,
        "§3.5",
        "Sample data cannot be read: a corrupt chunk, a checksum failure, or more data declared than the file holds.",
        deep=True,
    ),
    Code(
        "E146",
        "data_not_written",
        _E,
        "§3.5",
        "A feature dataset has storage that was never written: a chunk within its extent is not allocated, or a "
        "contiguous dataset has no storage.",
    ),
    # -- chunks ------------------------------------------------------------
    Code("E150", "chunk_splits_sample", _E, "§7.1", "A chunk does not span whole samples in the axes after the first."),
    # -- integrity ---------------------------------------------------------
    Code(
        "E160",
        "fingerprint_mismatch",
        _E,
        "§8.1",
        "A stored fingerprint differs from the one computed from the data.",
        deep=True,
    ),
    Code(
        "E161",
        "fingerprint_invalid",
        _E,
        "§8.1",
        "A fingerprint attribute is not of the form 'sha256:' followed by 64 hex digits.",
    ),
    Code(
        "E162",
        "checksum_mismatch",
        _E,
        "§8.4",
        "A chunk's stored bytes do not have the CRC32C its checksum dataset records: the chunk was damaged.",
        deep=True,
    ),
    Code(
        "E163",
        "checksum_invalid",
        _E,
        "§8.4",
        "A checksum dataset ('_crc32c.<name>') is malformed (not one-dimensional uint32 with one entry per chunk) "
        "or protects no feature dataset.",
    ),
    # -- sharded datasets (1.2) ------------------------------------------
    Code(
        "E170",
        "index_invalid",
        _E,
        "§12.1",
        "A shard index is not JSON, does not satisfy schema/h5ml-index-1.0.schema.json, or fails its own checks "
        "(sample counts, a path listed twice, its fingerprint, its version).",
    ),
    Code("E171", "shard_missing", _E, "§12.1", "A shard the index lists is not in the dataset's folder."),
    Code(
        "E172",
        "shard_changed",
        _E,
        "§12.1",
        "A shard's file fingerprint or size differs from the one its index records: the shard was changed or replaced.",
    ),
    Code(
        "E173",
        "shard_disagrees",
        _E,
        "§12.2",
        "A shard disagrees with its index: its split, sample count, features (encoding, dtype, sample shape, class "
        "names) or dataset card.",
    ),
    Code(
        "E174",
        "shard_invalid",
        _E,
        "§12.1",
        "A shard the index lists is not a valid h5ml file holding one split; its own report lists its issues.",
    ),
    # -- warnings (SHOULD) -------------------------------------------------
    Code("W200", "chunk_rows_not_power_of_two", _W, "§7.2", "The number of samples per chunk is not a power of two."),
    Code(
        "W201", "chunk_size_out_of_range", _W, "§7.3", "A chunk is smaller or larger than the recommended byte range."
    ),
    Code("W202", "fingerprint_missing", _W, "§8.1", "A feature or the file carries no fingerprint."),
    Code("W203", "license_missing", _W, "§4.2", "The file does not state a license."),
    Code("W204", "description_missing", _W, "§4.2", "The file has no description."),
    Code(
        "W205",
        "fixed_length_string",
        _W,
        "§3.4",
        "Strings are stored fixed-length; writers should use variable-length UTF-8.",
    ),
    Code(
        "W206", "ascii_string", _W, "§3.4", "Strings are stored with the ASCII character set; writers should use UTF-8."
    ),
    Code(
        "W207",
        "nonstandard_split_name",
        _W,
        "§5.1",
        "A split name is a common alias of a standard name ('valid', 'val', 'dev', 'eval').",
    ),
    Code(
        "W208",
        "bool_as_enum",
        _W,
        "§3.3",
        "A boolean is stored as the HDF5 enumeration FALSE/TRUE over an 8-bit integer instead of uint8 with "
        "logical_dtype 'bool'.",
    ),
    Code(
        "W209",
        "contiguous_resizable",
        _W,
        "§7.4",
        "A dense feature larger than 1 GiB is stored contiguous: it cannot be compressed, checksummed or grown.",
    ),
    Code(
        "W210",
        "shard_extra",
        _W,
        "§12.1",
        "An HDF5 file in a split's folder of a sharded dataset that its index does not list.",
    ),
    Code(
        "W211",
        "shard_staging_left",
        _W,
        "§12.1",
        "A sharded writer's staging folder (.h5ml-shards-*) left in the dataset's folder: a write that did not finish.",
    ),
    # -- info --------------------------------------------------------------
    Code("I300", "unknown_attribute", _I, "§1.4", "An attribute this version does not define; readers ignore it."),
    Code("I301", "unknown_object", _I, "§1.4", "A group or dataset this version does not define; readers ignore it."),
    Code("I302", "newer_minor", _I, "§1.4", "The file declares a newer MINOR version than this validator implements."),
    Code(
        "I303",
        "not_shuffled",
        _I,
        "§7.6",
        "A split records no shuffle seed: its samples may be stored in source order.",
    ),
    Code(
        "I304",
        "newer_encoding_minor",
        _I,
        "§6.1",
        "A feature's encoding_version has a newer MINOR than this validator implements; it is read as the known one.",
    ),
]

#: The registry, keyed by code.
CODES: Final[dict[str, Code]] = {c.code: c for c in _TABLE}

_BY_NAME: Final = {c.name: c for c in _TABLE}
if len(CODES) != len(_TABLE) or len(_BY_NAME) != len(_TABLE):  # pragma: no cover - guards edits
    raise RuntimeError("duplicate issue code or name in the registry")


def by_name(name: str) -> Code:
    """Return the registry entry whose stable name is ``name``.

    Parameters
    ----------
    name
        A name such as ``"incomplete"``.

    Returns
    -------
    Code
        The entry.

    Raises
    ------
    KeyError
        If no entry has that name.
    """
    return _BY_NAME[name]
