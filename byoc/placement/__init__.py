"""Placement by measurement: which target runs each region of a model (docs/placement.md).

    exe = byoc.build(module, targets=["dnnl", "ccompiler"], placement="measure")

`place` (place.py) chooses and partitions; `search` (search.py) is the dynamic program on a
cost table; `MeasurementCache` (cache.py) keeps the figures on disk; `CostModel`
(cost_model.py) prices units from cached figures for `placement="cost-model"`.
"""

from byoc.placement.cache import MeasurementCache, default_cache_path
from byoc.placement.cost_model import CostModel
from byoc.placement.place import MODES, Placement, PlacementError, normalise_mode, place
from byoc.placement.search import HOST, Assignment, CostTable, search

__all__ = [
    "HOST",
    "MODES",
    "Assignment",
    "CostModel",
    "CostTable",
    "MeasurementCache",
    "Placement",
    "PlacementError",
    "default_cache_path",
    "normalise_mode",
    "place",
    "search",
]
