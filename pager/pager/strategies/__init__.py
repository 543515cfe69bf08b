"""The built-in transfer strategies: one class each (on ``pager.strategy.Strategy``),
one module per family, named for what the family does with the pages.

| module | family | strategies |
|---|---|---|
| ``on_demand`` | a page moves when accessed | ``OnDemand``, ``HotK``, ``Multipath``, ``Custody`` |
| ``whole_object`` | every page moves at each handover | ``Proactive``, ``ContainerMigration`` |
| ``push_ahead`` | recent pages pushed to the next server before it | ``PushAhead``, ``IdleLink`` |
| ``replication`` | the state copied to the next server as it changes | ``ReplicateNext`` |
| ``ground`` | the object stays on the ground, accessed remotely | ``GroundStore`` |

The engine, its event log and the cost accounting are shared; how the network carries a
strategy's transfers is its ``network`` (a ``pager.NetworkUse``). ``pager.registry``
finds a strategy by name. docs/strategies.md gives each one's cost model.
"""

from pager.strategies.ground import GroundStore
from pager.strategies.on_demand import Custody, HotK, Multipath, OnDemand
from pager.strategies.push_ahead import IdleLink, PushAhead
from pager.strategies.replication import ReplicateNext, replicate_next_log
from pager.strategies.whole_object import (
           MIGRATION_DATA_FILE,
           ContainerMigration,
           MigrationModel,
           Proactive,
)

__all__ = ["OnDemand", "HotK", "Multipath", "Custody", "Proactive", "ContainerMigration",
           "MigrationModel", "MIGRATION_DATA_FILE", "PushAhead", "IdleLink", "ReplicateNext",
           "replicate_next_log", "GroundStore"]
