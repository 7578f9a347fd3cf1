"""Measurement: float and fixed accuracy, the QEMU cost bench, host-compiled C libraries and
throughput."""
