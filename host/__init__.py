"""Host bench: serial transport, QEMU launcher, protocol codec and device client."""
