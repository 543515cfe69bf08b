"""pager: Fongen's page-table model of session state, Zipf workloads, transfer
strategies and the replay engine shared by every backend.

Public API: import from ``pager`` (see ``__all__``); modules behind it are internal.
"""

from pager.trace import Trace

__version__ = "0.1.0"

__all__ = ["Trace", "__version__"]
