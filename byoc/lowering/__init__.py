"""Lowering of partitions to per-target dialects, and the `-t` outputs (`byoc.lowering.emit`)."""
