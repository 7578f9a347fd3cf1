"""Python integer reference: the device computation, integer for integer (docs/numeric.md)."""
