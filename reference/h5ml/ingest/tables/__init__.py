"""Convert CSV and Parquet tables to h5ml files (``h5ml convert``, source kind ``table``), streaming, through pandas and pyarrow.

Each column becomes one feature of shape ``(N,)`` named after it (§5.2):

==========================================  ====================================================
column                                      feature
==========================================  ====================================================
numbers                                     dense (§6.2): int64 (CSV integers), float64 (CSV
                                            numbers with a fraction, an exponent or a missing
                                            value, NaN = missing); Parquet keeps its type
                                            (int32, float32, ...), integers with nulls become
                                            float64 with NaN
booleans (``True``/``false``, ...)          dense bool (§3.3); with missing values float64
                                            1/0/NaN
text; any column listed in ``strings``      string (§6.4); a missing value is stored as ``""``
listed in ``categorical``                   categorical (§6.5): class names the distinct values
                                            as text, sorted (naturally: ``"2"`` before
                                            ``"10"``), missing values code -1
the ``label`` column                        categorical as above (role ``target``), unless it
                                            holds fractional numbers: then dense (a regression
                                            target)
Parquet dictionary columns                  categorical (pandas ``category`` columns are
                                            written so)
Parquet ``fixed_size_list`` (nested)        dense, sample shape the list sizes (outer first)
Parquet ``list`` (of fixed-size lists)      ragged (§6.3), rows of the inner shape; nested
                                            ``list`` levels: samples that vary in that many axes
Parquet ``binary``                          bytes (§6.6)
==========================================  ====================================================

The label column gets role ``target``, the others ``input``. A Parquet file
written by ``h5ml export`` records each feature's attributes in its field
metadata (:mod:`h5ml.ingest.tables.arrow`): those are read back (role,
description, units, sample rate, media type, and the class names of a
categorical column, in their order, a value outside them refused), and its
split names the split. Splits (§5.1):
a ``split_column`` whose values name each row's split (``train``, ``test``,
... with the aliases of :func:`h5ml.ingest.naming.standard_split_name`: ``valid`` ->
``validation``; the column itself is not stored); or ``split_ratios``
(``{"train": 0.8, "test": 0.2}``), stratified on a categorical label with
:func:`h5ml.ingest.splitting.assign_splits`; or neither: every row in
``train``, in file order.

CSV fields are split at ``delimiter`` (``","``; a tab for ``.tsv``), and the
first line names the columns unless ``header=False`` (then ``c0``, ``c1``,
...). A CSV that parses as one column whose values all hold a space, tab,
``;`` or ``|`` as often is refused unless the delimiter is given
(:mod:`h5ml.ingest.tables.delimiters`).

CSV columns are typed by a first pass over the whole file (every cell is
read as text, so one chunk cannot type a column differently from another):
a column is numeric when more than half of its non-missing cells are
numbers, and then a cell that is not a number is an error (the row is
skipped with ``on_error="skip"``); boolean when every non-missing cell is
``true``/``false`` in any case; text otherwise. A row with more fields than
the header is an error (skipped with ``on_error="skip"``); a row with fewer
fields has missing values at its end (pandas cannot tell them from empty
cells). Missing cells are the pandas defaults (empty, ``NA``, ``NaN``,
``null``, ...).

Memory stays bounded: CSV is read ``rows_per_read`` rows at a time (pandas
``chunksize``), Parquet batch by batch within row groups (pyarrow
``iter_batches``, at most ``rows_per_read`` rows each). What is held whole: the class names of categorical
columns and, with ``split_ratios``, one byte per row (its split) and, when
stratified, four bytes per row (its class).

Modules: :mod:`~h5ml.ingest.tables.read` reads the file in chunks
(:mod:`~h5ml.ingest.tables.delimiters` checks the CSV delimiter,
:mod:`~h5ml.ingest.tables.arrow` reads Parquet columns of arrays),
:mod:`~h5ml.ingest.tables.columns` types and converts the columns,
:mod:`~h5ml.ingest.tables.plan` is the first pass, :mod:`~h5ml.ingest.tables.write`
the second, :mod:`~h5ml.ingest.tables.convert` is :func:`convert_table`.
"""

from h5ml.ingest.tables.columns import MAX_LABEL_CLASSES
from h5ml.ingest.tables.convert import convert_table
from h5ml.ingest.tables.read import DEFAULT_ROWS_PER_READ, TABLE_FORMATS, TableFormat

__all__ = ["DEFAULT_ROWS_PER_READ", "MAX_LABEL_CLASSES", "TABLE_FORMATS", "TableFormat", "convert_table"]
