"""GSC-C data: the 12-class keyword set, its corrupted test conditions, and their on-disk format.

`build()` makes a data directory from real GSC v2 + ESC-50 trees or from the built-in synthetic
recipe (docs/data.md); the loaders read both the same way.
"""

from codegen.data.builder import build
from codegen.data.common import CLASSES, NOISES, DataError, utterance_of
from codegen.data.store import (
    Condition,
    Split,
    background_noises,
    condition_ids,
    conditions,
    dataset_info,
    load_condition,
    load_split,
)

__all__ = [
    "utterance_of",
    "CLASSES",
    "NOISES",
    "Condition",
    "DataError",
    "Split",
    "background_noises",
    "build",
    "condition_ids",
    "conditions",
    "dataset_info",
    "load_condition",
    "load_split",
]
