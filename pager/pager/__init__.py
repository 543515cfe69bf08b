"""pager: Fongen's page-table model of session state, Zipf workloads, transfer
strategies and the replay engine shared by every backend.

Public API: import from ``pager`` (see ``__all__``); modules behind it are internal.
The model, the closed form and the cost accounting are in docs/paging-model.md.
"""

from pager.engine import COUNTER_DTYPE, Replay, paper_counts, replay, run_paper
from pager.faults import (
    NEVER_NS,
    FailureSchedule,
    FaultModel,
    FaultOutcome,
    ReplicaRing,
    apply_failures,
    write_mask,
)
from pager.paper import (
    PAPER_QUANTITIES,
    Moments,
    PaperCounts,
    PaperExpectation,
    exact_paper,
    json_floats,
    paper_summary,
    table_movements,
)
from pager.strategies_extra import STRATEGY_NAMES, GroundStore, HotK, PushAhead, make_strategy
from pager.strategies_related import (
    ContainerMigration,
    Custody,
    IdleLink,
    MigrationModel,
    Multipath,
    ReplicateNext,
    replicate_next_log,
)
from pager.strategy import (
    EVENT_DTYPE,
    GROUND,
    NOWHERE,
    PAGING,
    SELECT_SIGNATURE,
    EventKind,
    NetworkUse,
    OnDemand,
    Proactive,
    Strategy,
    handover_rule,
    network_use,
    select_all,
    select_none,
)
from pager.trace import Trace
from pager.workload import (
    PAPER_ACCESS_INTERVAL_NS,
    PaperParams,
    ZipfSampler,
    paper_key,
    paper_trace,
    trail_trace,
    zipf_probabilities,
)

__version__ = "0.1.0"

__all__ = [
    "COUNTER_DTYPE",
    "FailureSchedule",
    "FaultModel",
    "FaultOutcome",
    "NEVER_NS",
    "ReplicaRing",
    "apply_failures",
    "write_mask",
    "ContainerMigration",
    "Custody",
    "IdleLink",
    "MigrationModel",
    "Multipath",
    "NetworkUse",
    "PAGING",
    "ReplicateNext",
    "replicate_next_log",
    "EVENT_DTYPE",
    "GROUND",
    "NOWHERE",
    "PAPER_ACCESS_INTERVAL_NS",
    "PAPER_QUANTITIES",
    "SELECT_SIGNATURE",
    "EventKind",
    "GroundStore",
    "HotK",
    "PushAhead",
    "STRATEGY_NAMES",
    "make_strategy",
    "Moments",
    "OnDemand",
    "PaperCounts",
    "PaperExpectation",
    "PaperParams",
    "Proactive",
    "Replay",
    "Strategy",
    "Trace",
    "ZipfSampler",
    "__version__",
    "exact_paper",
    "json_floats",
    "handover_rule",
    "network_use",
    "paper_counts",
    "paper_key",
    "paper_summary",
    "paper_trace",
    "trail_trace",
    "replay",
    "run_paper",
    "select_all",
    "select_none",
    "table_movements",
    "zipf_probabilities",
]
