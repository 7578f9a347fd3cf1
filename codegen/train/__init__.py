"""`codegen train`: the source model on clean data."""
