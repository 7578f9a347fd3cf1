"""Shared definitions every stage reads and none decides: typed errors, the numeric contract
(fixed-point rounding, formats, limits, tables), the float feature definition and the shipped
resource folders. Imports nothing else of codegen."""
