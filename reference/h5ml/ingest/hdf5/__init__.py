"""HDF5 files as people publish them, converted to h5ml through a plan that is shown and can be edited (§4-§7).

``h5ml convert SOURCES... OUT.h5`` on HDF5 sources works in two steps:

1. **Propose** (:func:`plan_hdf5`, ``--plan``): walk every source
   (:mod:`~h5ml.ingest.hdf5.inventory`), read its layout
   (:mod:`~h5ml.ingest.hdf5.readings`: arrays with a sample axis, one group
   or dataset per sample, nested records, MATLAB v7.3 variables, Fuel
   splits), name its splits from groups, array names or file names
   (:mod:`~h5ml.ingest.hdf5.names`), join several files (shards
   concatenated, x and y files joined by row), complete the labels
   (:mod:`~h5ml.ingest.hdf5.labeling`: squeeze, one-hot, class names), and
   list everything else as left out. Whatever is uncertain goes in the
   plan's ``confirm`` list instead of being guessed.
2. **Convert** (:func:`convert_hdf5`): check the plan against the sources
   (:mod:`~h5ml.ingest.hdf5.check`: counts, paths, names, every object
   accounted for) and write it (:mod:`~h5ml.ingest.hdf5.run`), streaming,
   in blocks of whole chunks.

The plan (:mod:`~h5ml.ingest.hdf5.plan`) is a JSON document with its own
schema (``schema/h5ml-convert-plan-1.0.schema.json``); edited and passed back
(``plan=``, ``--plan-file``), it converts exactly as written.
"""

from h5ml.ingest.hdf5.convert import convert_hdf5, plan_hdf5
from h5ml.ingest.hdf5.inventory import Inventory, Node, take_inventory
from h5ml.ingest.hdf5.plan import Feature, LeftOut, Part, Plan, SourceFile, Split, load_plan, plan_json_schema
from h5ml.ingest.hdf5.records import SINGLE_FEATURE

__all__ = [
    "SINGLE_FEATURE",
    "Feature",
    "Inventory",
    "LeftOut",
    "Node",
    "Part",
    "Plan",
    "SourceFile",
    "Split",
    "convert_hdf5",
    "load_plan",
    "plan_hdf5",
    "plan_json_schema",
    "take_inventory",
]
