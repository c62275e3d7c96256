"""Tables: the facade users hold."""

from laketide.table.table import Table

__all__ = ["Table"]
