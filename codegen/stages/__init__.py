"""The input stages a mode may run on the features before the encoder (docs/architecture.md §3):
one registry (`codegen.stages.registry`) whose every entry owns its settings, quantizer, float
twin, integer reference and firmware part; `codegen.stages.cmvn` the built-in ones."""
