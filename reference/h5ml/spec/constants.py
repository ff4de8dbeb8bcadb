"""Constants of the h5ml specification (SPEC.md), in one place.

Everything that names a group, an attribute, an encoding or a limit defined by
SPEC.md lives here, so that the writer, the reader and the validator cannot
disagree. Each constant cites the clause that defines it (§1 versions, §3 the
storage profile, §4 root attributes, §5 names and layout, §6 encodings and
media types, §7 chunks).
"""

from __future__ import annotations

import re
from typing import BinaryIO, Final

import numpy as np

__all__ = [
    "BOOL_ENUM_MEMBERS",
    "CORE_FILTERS",
    "ENCODINGS",
    "ENCODING_COMPONENTS",
    "ENCODING_VERSION",
    "FEATURE_COMMON_ATTRS",
    "FINGERPRINT_ALGORITHM",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FORMAT_VERSION_STRING",
    "HDF5_SIGNATURE",
    "KNOWN_EXTENSIONS",
    "LARGE_CONTIGUOUS_BYTES",
    "LARGE_SAMPLE_BYTES",
    "LIBVER_BOUNDS",
    "MAX_CHUNK_BYTES",
    "MAX_SUPERBLOCK_VERSION",
    "MIN_CHUNK_BYTES",
    "NAME_PATTERN",
    "RESERVED_PREFIX",
    "ROLES",
    "ROOT_ARRAY_ATTRS",
    "ROOT_ARRAY_ELEMENTS",
    "ROOT_ATTRS",
    "ROOT_OPTIONAL_ATTRS",
    "ROOT_REQUIRED_ATTRS",
    "SOURCE_SPLITS_ATTR",
    "SPLIT_ALIASES",
    "SPLIT_ATTRS",
    "STANDARD_SPLITS",
    "STATS_ATTRS",
    "TARGET_CHUNK_BYTES",
    "WHITESPACE",
    "is_gzip_level",
    "is_shuffle_seed",
    "is_valid_name",
    "media_type_problem",
    "parse_version",
    "superblock_version",
]

#: §4.1 value of the root attribute ``format``.
FORMAT_NAME: Final = "h5ml"
#: §1.2 the version of the specification this package implements.
FORMAT_VERSION: Final = (1, 2)
FORMAT_VERSION_STRING: Final = "1.2"

#: §1.5 extension names this implementation understands (none in 1.0, 1.1 or 1.2).
KNOWN_EXTENSIONS: Final[frozenset[str]] = frozenset()

#: §3.1 HDF5 library-version bounds the reference writer uses: every object
#: stays readable by HDF5 1.10.
LIBVER_BOUNDS: Final = ("earliest", "v110")
#: §3.1 the newest superblock version HDF5 1.10 reads.
MAX_SUPERBLOCK_VERSION: Final = 3
#: §3.1 the 8 bytes that start an HDF5 superblock, at offset 0, 512, 1024, 2048, ... (a user block may come first).
HDF5_SIGNATURE: Final = b"\x89HDF\r\n\x1a\n"

#: §4.2 root attributes every file carries.
ROOT_REQUIRED_ATTRS: Final = ("format", "format_version", "name", "created", "writer", "must_understand", "complete")
#: §4.2 root attributes a file may carry.
ROOT_OPTIONAL_ATTRS: Final = (
    "version",
    "description",
    "license",
    "citation",
    "creator",
    "homepage",
    "keywords",
    "source",
    "required_filters",
    "fingerprint",
    "view_of",
    "view_index_fingerprint",
)
ROOT_ATTRS: Final = ROOT_REQUIRED_ATTRS + ROOT_OPTIONAL_ATTRS
#: §3.7 the only root attributes that hold one-dimensional arrays; every other
#: attribute this specification defines holds a single value in a scalar dataspace (E116).
ROOT_ARRAY_ATTRS: Final = ("must_understand", "keywords", "required_filters")
#: §4.2 the element type of each of those arrays: "string" (a 1-D string array)
#: or "integer" (a 1-D integer array, of any integer type of §3.2).
ROOT_ARRAY_ELEMENTS: Final = {"must_understand": "string", "keywords": "string", "required_filters": "integer"}
#: §4.7 the user attribute in which the reference converters record where each split's samples came from
#: (JSON, ``schema/h5ml-source-splits-1.0.schema.json``; :mod:`h5ml.ingest.provenance` writes and reads it).
SOURCE_SPLITS_ATTR: Final = "h5ml-ingest:source-splits"

#: §5.3 attributes of a split group (``num_samples`` required).
SPLIT_ATTRS: Final = ("num_samples", "description", "shuffle_seed")

#: §6.7 statistics attributes; they may appear on dense and ragged features only (E117).
STATS_ATTRS: Final = ("stats_count", "stats_min", "stats_max", "stats_mean", "stats_std")

#: §6.1 attributes every feature may carry (``encoding``, ``encoding_version`` required).
FEATURE_COMMON_ATTRS: Final = (
    "encoding",
    "encoding_version",
    "description",
    "units",
    "role",
    "sample_rate",
    "logical_dtype",
    "fingerprint",
    *STATS_ATTRS,
    "media_type",
)

#: §5.1 split names readers and tools treat as standard.
STANDARD_SPLITS: Final = ("train", "validation", "test")
#: §5.1 common aliases of the standard split names, and the standard name each
#: stands for; a file SHOULD NOT use them (W207).
SPLIT_ALIASES: Final = {"valid": "validation", "val": "validation", "dev": "validation", "eval": "test"}

#: §5.4 names starting with this prefix are reserved for the specification.
RESERVED_PREFIX: Final = "_"

#: §5.1.1 (1.1) the whitespace characters of the naming rule: the 25 code points with the
#: Unicode property White_Space (Unicode 15.1), listed so that every implementation uses the same
#: set (Python's ``str.isspace`` adds U+001C-U+001F, which are not White_Space).
WHITESPACE: Final = frozenset(
    chr(c)
    for c in (
        *range(0x0009, 0x000E),
        0x0020,
        0x0085,
        0x00A0,
        0x1680,
        *range(0x2000, 0x200B),
        0x2028,
        0x2029,
        0x202F,
        0x205F,
        0x3000,
    )
)
#: §5.1.1 a split or feature name: non-empty, no "/", no leading ".", "_" or
#: whitespace (:data:`WHITESPACE`); the trailing whitespace and the 255 UTF-8 bytes are checked separately.
NAME_PATTERN: Final = re.compile("^[^/._" + "".join(f"\\U{ord(c):08x}" for c in sorted(WHITESPACE)) + "][^/]*$")

#: §6 encodings and the HDF5 object kind that holds each.
ENCODINGS: Final = {
    "dense": "dataset",
    "string": "dataset",
    "categorical": "group",
    "ragged": "group",
    "bytes": "group",
}
#: §6.1 the encoding_version this implementation writes (MAJOR.MINOR).
ENCODING_VERSION: Final = "1.0"
#: §6 required (and optional) members of group encodings.
ENCODING_COMPONENTS: Final = {
    "categorical": (("codes", "class_names"), ()),
    "ragged": (("values", "offsets"), ("shapes",)),
    "bytes": (("values", "offsets"), ()),
}

#: §6.1 values of the ``role`` attribute.
ROLES: Final = ("input", "target", "metadata")

#: §3.3 the members, as (name, value), of the HDF5 enumeration over int8 that h5py
#: writes for numpy bool: tolerated with a warning (W208), read as booleans.
BOOL_ENUM_MEMBERS: Final = ((b"FALSE", 0), (b"TRUE", 1))

#: §3.5 HDF5 filter ids every HDF5 build decodes: deflate, shuffle, fletcher32.
CORE_FILTERS: Final = {1: "deflate", 2: "shuffle", 3: "fletcher32"}

#: §7.3 chunk byte sizes: the reference writer aims at the target (the size of
#: HDF5's default chunk cache); files SHOULD stay in [MIN, MAX].
TARGET_CHUNK_BYTES: Final = 1 << 20
MIN_CHUNK_BYTES: Final = 16 << 10
MAX_CHUNK_BYTES: Final = 4 << 20
#: §7.1.1 a sample larger than this is the only case where a chunk may hold
#: part of a sample (a one-row slab of at most this many bytes).
LARGE_SAMPLE_BYTES: Final = 16 << 20
#: §7.4 the dataset of a dense feature larger than this many bytes (1 GiB)
#: SHOULD NOT use contiguous layout (W209).
LARGE_CONTIGUOUS_BYTES: Final = 1 << 30

#: §8.1 the hash of content fingerprints.
FINGERPRINT_ALGORITHM: Final = "sha256"

_VERSION_RE = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


def is_shuffle_seed(value: object) -> bool:
    """Whether ``value`` can be a split's ``shuffle_seed``: an integer in ``[0, 2**63)``, a non-negative int64 (§5.3, §7.6).

    Python and numpy integers count; a bool does not.
    """
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and bool(0 <= value < 2**63)


def is_gzip_level(value: object) -> bool:
    """Whether ``value`` is a deflate level, an integer 0-9 (§3.5); a bool is not one."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and bool(0 <= value <= 9)


def superblock_version(stream: BinaryIO) -> int | None:
    """Return the superblock version of an HDF5 file open for binary reading, None without an HDF5 signature (§3.1).

    Parameters
    ----------
    stream
        A seekable binary stream at any position.

    Returns
    -------
    int or None
        The version byte after the first :data:`HDF5_SIGNATURE` at offset 0, 512, 1024, ...; None when no
        signature comes before the end of the file.
    """
    offset = 0
    while True:
        stream.seek(offset)
        head = stream.read(len(HDF5_SIGNATURE) + 1)
        if len(head) < len(HDF5_SIGNATURE) + 1:
            return None
        if head.startswith(HDF5_SIGNATURE):
            return int(head[-1])
        offset = 512 if offset == 0 else offset * 2


def parse_version(text: str) -> tuple[int, int]:
    """Parse a ``MAJOR.MINOR`` version string (§1.2).

    Parameters
    ----------
    text
        The version, for example ``"1.0"``.

    Returns
    -------
    tuple of int
        ``(major, minor)``.

    Raises
    ------
    ValueError
        If ``text`` is not two non-negative integers without leading zeros
        joined by a dot.
    """
    m = _VERSION_RE.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"{text!r} is not a MAJOR.MINOR version such as '1.0' (§1.2)")
    return int(m.group(1)), int(m.group(2))


def is_valid_name(name: str) -> bool:
    """Tell whether ``name`` may name a split or a feature (§5.1, §5.2).

    Parameters
    ----------
    name
        The candidate name (any Unicode).

    Returns
    -------
    bool
        True when the name matches :data:`NAME_PATTERN`, holds no NUL (HDF5
        cannot store it) and no lone surrogate, and encodes to at most 255
        bytes of UTF-8.
    """
    if not isinstance(name, str) or "\x00" in name or not NAME_PATTERN.match(name) or name[-1] in WHITESPACE:
        return False
    try:
        return len(name.encode("utf-8")) <= 255
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form
        return False


#: §6.6 an RFC 6838 restricted-name (a media type's type or subtype): a letter
#: or digit, then at most 126 letters, digits or ``!#$&^_.+-``.
_MEDIA_NAME: Final = r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]{0,126}"
#: §6.6 an RFC 9110 token (a parameter name, or an unquoted parameter value).
_MEDIA_TOKEN: Final = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
#: §6.6 an RFC 9110 quoted-string: printable ASCII, space and tab, with ``"``
#: and ``\\`` escaped by a backslash (the obsolete non-ASCII obs-text is refused).
_MEDIA_QUOTED: Final = r'"(?:[\t !#-\[\]-~]|\\[\t -~])*"'
_MEDIA_TYPE_RE: Final = re.compile(rf"{_MEDIA_NAME}/{_MEDIA_NAME}")
#: §6.6 one parameter with the optional whitespace (space or tab) RFC 9110 allows around its ``;``.
_MEDIA_PARAMETER_RE: Final = re.compile(rf"[ \t]*;[ \t]*{_MEDIA_TOKEN}=(?:{_MEDIA_TOKEN}|{_MEDIA_QUOTED})")


def media_type_problem(text: object) -> str | None:
    """Say why ``text`` is not a media type a bytes feature may carry, or return ``None`` (§6.6).

    §6.6 allows an IANA media type ``type/subtype`` optionally followed by
    parameters (RFC 6838). The grammar checked is that of RFC 6838 and RFC
    9110: ``type`` and ``subtype`` are restricted-names (a letter or digit,
    then at most 126 letters, digits or ``!#$&^_.+-``); each parameter is
    ``;`` then ``name=value``, with optional spaces or tabs around the ``;``
    but none around ``=``, a token as the name and a token or a double-quoted
    string (printable ASCII, backslash escapes) as the value. Nothing else may
    come before, between or after. The writer (:func:`h5ml.model.layout.feature_attrs`)
    refuses, and the validator reports as E117, exactly the values this
    function finds a problem with.

    Parameters
    ----------
    text
        The candidate value of the ``media_type`` attribute (any object).

    Returns
    -------
    str or None
        A phrase that follows the quoted value in a message, such as ``"ends
        with whitespace; remove it"``; ``None`` when the value is
        well formed, for example ``"image/png"`` or ``"audio/L16; rate=16000"``.

    Examples
    --------
    >>> media_type_problem("text/plain; charset=utf-8") is None
    True
    >>> media_type_problem("image/png; charset") is None
    False
    """
    if not isinstance(text, str):
        return f"is a {type(text).__name__}, not a string"
    head = _MEDIA_TYPE_RE.match(text)
    if head is None or (head.end() < len(text) and text[head.end()] not in " \t;"):
        return (
            "does not start with a type/subtype (RFC 6838: each of the two names is a letter or digit, "
            "then letters, digits or !#$&^_.+-, at most 127 characters)"
        )
    pos = head.end()
    while pos < len(text):
        if not text[pos:].strip(" \t"):
            return "ends with whitespace; remove it"
        parameter = _MEDIA_PARAMETER_RE.match(text, pos)
        if parameter is None:
            return (
                f"has a malformed parameter at {text[pos:]!r} (RFC 9110: each parameter is ';' then name=value, "
                "the name a token, the value a token or a double-quoted string)"
            )
        pos = parameter.end()
    return None
