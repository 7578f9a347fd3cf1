"""The target: toolchain flags, firmware source lists, board presets and UART settings, the
firmware build and the QEMU probes."""
