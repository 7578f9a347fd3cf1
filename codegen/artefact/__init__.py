"""A build directory on disk: the frozen program (program.json/.npz) and the manifest, written by
`codegen build` and read by everything after it. Torch-free: reading a build needs neither torch
nor a compiler stage."""
