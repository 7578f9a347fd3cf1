"""Quantization: float IR to fixed IR, every format, shift, table and proof decided once."""
