"""satpage.cluster: a local cluster of real satpage processes, and the driver that
replays a Trace through any cluster's gateway (local, Docker Swarm or Kubernetes).

- ``cluster_up`` / ``cluster_status`` / ``cluster_down``: one redis-server and one
  satnode per satellite plus a gateway on loopback, recorded in a state directory;
  ``LocalCluster``: the one owner of those processes (kill, pause, restart, ISL cuts).
- ``replayer.replay(trace, strategy, target, failures)``: the one replayer (a
  failure-free run is an empty schedule); ``satpage.backend.ClusterBackend`` wraps it
  (``satpage compare --backend cluster`` and ``cluster chaos --failure-schedule``).
- ``replay_trace(trace, strategy, target=...)``: one failure-free replay's counts as
  plain numbers, for a script or a test with a trace in hand.
- ``replay_paper(trace, target=...)``: ``pager.PaperCounts`` for ``satpage paper``.
- ``counters.read_replication(state)``: the replication copies the satnodes counted.
- ``chaos.run_chaos``: the chaos run; ``failreplay.run_schedule_replay``: a
  simulation's failure schedule replayed on a local cluster.
"""

from satpage.cluster.driver import (
    SessionCounts,
    replay_paper,
    replay_sessions,
    replay_trace,
    resolve_target,
)
from satpage.cluster.local import (
    DEFAULT_CONSTELLATION,
    DEFAULT_PORT_BASE,
    ClusterState,
    LocalCluster,
    PortsTaken,
    ProcessRecord,
    cluster_down,
    cluster_status,
    cluster_up,
    default_state_dir,
    load_state,
)

__all__ = [
    "DEFAULT_CONSTELLATION",
    "DEFAULT_PORT_BASE",
    "ClusterState",
    "LocalCluster",
    "PortsTaken",
    "ProcessRecord",
    "SessionCounts",
    "cluster_down",
    "cluster_status",
    "cluster_up",
    "default_state_dir",
    "load_state",
    "replay_paper",
    "replay_sessions",
    "replay_trace",
    "resolve_target",
]
