"""satpage: scenarios, runs, sweeps, reports and the CLI over orbit_model and pager."""

__version__ = "0.1.0"

__all__ = ["__version__"]
