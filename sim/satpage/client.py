"""satpage.client: the client library, ``satpage_client`` (its own distribution,
``satpage-client``, which depends on grpcio and protobuf only), under the
simulator's name."""

from satpage_client import (
    STRATEGIES,
    Access,
    ClockInfo,
    Gateway,
    Handover,
    InvalidArgument,
    PageLost,
    SatpageError,
    Session,
    SessionExpired,
    SessionStats,
    Unavailable,
)

__all__ = ["SatpageError", "SessionExpired", "PageLost", "Unavailable", "InvalidArgument", "Access", "Handover",
           "SessionStats", "ClockInfo", "Gateway", "Session", "STRATEGIES"]
