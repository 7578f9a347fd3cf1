"""Host harness of the ELaTTA kernels (harness.c) and its Python driver (driver.py)."""
