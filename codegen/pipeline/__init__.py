"""The drivers that run the stages in order: `codegen build` and the Python API."""
