"""Boot media for real Zynq-7020 boards: SD card images (sdcard) and JTAG scripts (jtag)."""
