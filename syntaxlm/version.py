"""The package's version, recorded in every result file and data set it writes (as pyproject.toml)."""

__version__ = "0.1.0"
