"""The ``laketide`` command: inspect, import into and maintain tables from the shell."""

from laketide.cli.app import main

__all__ = ["main"]
