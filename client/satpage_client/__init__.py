"""satpage_client: use a live satpage service from an application.

A session is opened by location; the service hands it over between satellites
by itself (docs/live.md). Pages are numbered; a page holds up to 4 KiB.

>>> from satpage_client import Session                         # doctest: +SKIP
>>> with Session.open("127.0.0.1:17000", lat_deg=59.9, lon_deg=10.7,
...                   strategy="on-demand") as s:               # doctest: +SKIP
...     s.write(7, b"hello")
...     assert s.read(7) == b"hello"

TLS (docs/security.md): pass ``tls_dir`` (a directory with ``ca.pem``,
``client.pem`` and ``client-key.pem``; default ``$SATPAGE_TLS_DIR``, else the
recorded local cluster's, ``$SATPAGE_CLUSTER_DIR/cluster.json``); the gateway
must present ``gateway.satpage``. Without
one the channel is plaintext (a gateway started ``--insecure``). The session
token the gateway returns at open goes with every later call of the session in
gRPC metadata ``satpage-token``.

Errors are typed by the reason the service attaches (``satpage_client.errinfo``),
not by their text: ``SessionExpired`` (the session ended, for example idle past
the gateway's timeout: reason UNKNOWN_SESSION), ``PageLost`` (a page the session
had is gone: every holder of it lost its memory, PAGE_NOT_FOUND),
``Unavailable`` (no gateway, satellite or ephemeris answers now: retry later),
``InvalidArgument`` (also a ``ValueError``); any other failure is a
``SatpageError``, whose ``reason`` says which.

This package depends on grpcio and protobuf only (``pip install satpage-client``);
it also holds the Python stubs generated from services/proto (``satpage_client.rpc``),
which the simulator's cluster harness uses too. ``satpage.client`` re-exports it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["SatpageError", "SessionExpired", "PageLost", "Unavailable", "InvalidArgument", "Access", "Handover",
           "SessionStats", "ClockInfo", "Gateway", "Session", "STRATEGIES"]

#: satpage.v1.Strategy values of the live strategies.
STRATEGIES = {"on-demand": 1, "proactive": 2, "push-ahead": 3}
_OUTCOMES = {0: "unspecified", 1: "local", 2: "created", 3: "moved"}
TOKEN_KEY = "satpage-token"


class SatpageError(Exception):
    """A satpage request failed; ``code`` is the gRPC status name, ``reason``
    the service's ErrorInfo reason ("" when it gave none)."""

    def __init__(self, message: str, code: str = "UNKNOWN", reason: str = ""):
        super().__init__(message)
        self.code = code
        self.reason = reason


class SessionExpired(SatpageError):
    """The session is gone: ended, or idle longer than the gateway's timeout."""


class PageLost(SatpageError):
    """A page the session had is gone (every satellite holding it lost its memory)."""


class Unavailable(SatpageError):
    """No answer now (gateway or satellite down, no satellite overhead, ephemeris horizon)."""


class InvalidArgument(SatpageError, ValueError):
    """The request itself is wrong (a bad latitude, an oversize page, ...)."""


def _translate(exc, what: str) -> SatpageError:
    import grpc

    from satpage_client import errinfo

    code = exc.code() if hasattr(exc, "code") else None
    name = code.name if code is not None else "UNKNOWN"
    why = errinfo.reason(exc)
    message = f"{what}: {name}: {exc.details() if hasattr(exc, 'details') else exc}"
    if why == errinfo.UNKNOWN_SESSION:
        return SessionExpired(message, name, why)
    if why == errinfo.PAGE_NOT_FOUND:
        return PageLost(message, name, why)
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Unavailable(message, name, why)
    if code in (grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.OUT_OF_RANGE):
        return InvalidArgument(message, name, why)
    return SatpageError(message, name, why)


@dataclass(frozen=True)
class Access:
    """One read or write as the service served it, and its latency on the wire."""

    page: int
    write: bool
    satellite: int  # the serving satellite
    outcome: str  # local | created | moved (a page fault)
    hops: int  # ISL hops the page travelled (0 unless moved)
    scenario_time_ns: int  # the constellation clock's time the gateway used
    latency_s: float  # request to response, measured by the client


@dataclass(frozen=True)
class Handover:
    """From ``time_ns`` (ns from the epoch, a handover step) on, ``satellite`` serves."""

    time_ns: int
    satellite: int


@dataclass(frozen=True)
class SessionStats:
    """What the gateway counted for one session (movements and hops measured by the relays)."""

    schedule: list[Handover]
    scenario_time_ns: int
    accesses: int
    created: int
    ondemand_moves: int
    ondemand_hops: int
    proactive_moves: int
    proactive_hops: int
    push_moves: int
    push_hops: int
    #: push-ahead with a lead: the handover not yet due that pages were copied ahead for
    copied_ahead_for: Handover | None = None

    @property
    def movements(self) -> int:
        return self.ondemand_moves + self.proactive_moves + self.push_moves

    @property
    def page_hops(self) -> int:
        return self.ondemand_hops + self.proactive_hops + self.push_hops


@dataclass(frozen=True)
class ClockInfo:
    """The gateway's constellation clock and ephemeris."""

    epoch: str
    speed: float
    now_ns: int
    constellation: str
    ephemeris_end_ns: int
    step_ns: int
    policy: str
    sticky: bool
    min_elevation_deg: float
    push_lead_ns: int = 0  # push-ahead copies this long before the handover (docs/live.md)
    reallocation_interval_ns: int = 0  # scheduled reallocation (0: none; orbit_model.handover)
    reallocation_phase_ns: int = 0


class Gateway:
    """A connection to a satpage gateway (a gRPC channel); cheap to share between sessions."""

    def __init__(self, target: str, *, tls_dir: str | Path | None = None, timeout_s: float = 30.0):
        from satpage_client.channel import open_channel, tls_dir_for
        from satpage_client.rpc import satpage_pb2_grpc as pbg

        if tls_dir is None:
            tls_dir = tls_dir_for(target)  # $SATPAGE_TLS_DIR, or the recorded local cluster's
        opts = [("grpc.max_receive_message_length", 64 << 20)]
        try:
            self._channel = open_channel(target, Path(tls_dir) if tls_dir else None, options=opts)
        except OSError as exc:
            raise InvalidArgument(str(exc), "INVALID_ARGUMENT") from None
        self.target = target
        self.timeout_s = timeout_s
        self.pages = pbg.PageServiceStub(self._channel)
        self.control = pbg.GatewayServiceStub(self._channel)

    def clock(self) -> ClockInfo:
        from satpage_client.rpc import satpage_pb2 as pb

        try:
            c = self.control.Clock(pb.ClockRequest(), timeout=self.timeout_s)
        except Exception as exc:  # grpc.RpcError
            raise _translate(exc, f"clock of {self.target}") from None
        return ClockInfo(c.epoch, c.speed, c.now_ns, c.constellation, c.ephemeris_end_ns, c.step_ns,
                         c.policy, c.sticky, c.min_elevation_deg, c.push_lead_ns,
                         c.reallocation_interval_ns, c.reallocation_phase_ns)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@dataclass
class Session:
    """A live session. Not thread-safe: one session, one thread (open several for parallelism)."""

    gateway: Gateway
    id: str
    lat_deg: float
    lon_deg: float
    strategy: str
    satellite: int
    opened_ns: int
    record: bool = False
    accesses: list[Access] = field(default_factory=list)
    _token: str = ""
    _own_gateway: bool = False
    _closed: bool = False

    @classmethod
    def open(cls, gateway: str | Gateway, *, lat_deg: float, lon_deg: float, strategy: str = "on-demand",
             tls_dir: str | Path | None = None, record: bool = False, timeout_s: float = 30.0) -> Session:
        """Open a session for a place (degrees, WGS84). ``gateway`` is ``host:port`` or a
        ``Gateway``; ``record`` keeps every ``Access`` in ``accesses`` (a trace of the run)."""
        from satpage_client.rpc import satpage_pb2 as pb

        if strategy not in STRATEGIES:
            raise InvalidArgument(f"strategy {strategy!r} is not one of {', '.join(STRATEGIES)}",
                                  "INVALID_ARGUMENT")
        own = not isinstance(gateway, Gateway)
        gw = Gateway(gateway, tls_dir=tls_dir, timeout_s=timeout_s) if own else gateway
        try:
            resp, call = gw.control.OpenLiveSession.with_call(
                pb.OpenLiveSessionRequest(lat_deg=lat_deg, lon_deg=lon_deg, strategy=STRATEGIES[strategy]),
                timeout=gw.timeout_s)
        except Exception as exc:
            if own:
                gw.close()
            raise _translate(exc, f"open a session at {lat_deg}, {lon_deg}") from None
        token = getattr(resp, "token", "") or ""
        for key, value in list(call.initial_metadata() or ()) + list(call.trailing_metadata() or ()):
            if key == TOKEN_KEY:
                token = value
        return cls(gw, resp.session_id, lat_deg, lon_deg, strategy, resp.satellite, resp.scenario_time_ns,
                   record, _token=token, _own_gateway=own)

    def _metadata(self):
        return ((TOKEN_KEY, self._token),) if self._token else None

    def _call(self, method, request, what: str):
        if self._closed:
            raise SessionExpired(f"session {self.id} is closed", "NOT_FOUND", "UNKNOWN_SESSION")
        try:
            return method(request, timeout=self.gateway.timeout_s, metadata=self._metadata())
        except Exception as exc:
            raise _translate(exc, f"{what} (session {self.id})") from None

    def write(self, page: int, data: bytes) -> Access:
        """Store ``data`` as page ``page``."""
        from satpage_client.rpc import satpage_pb2 as pb

        t0 = time.perf_counter()
        r = self._call(self.gateway.pages.WritePage,
                       pb.WritePageRequest(session_id=self.id, page=page, data=bytes(data)), f"write page {page}")
        a = Access(page, True, r.satellite, _OUTCOMES.get(r.outcome, "?"), r.hops, r.scenario_time_ns,
                   time.perf_counter() - t0)
        self.satellite = r.satellite
        if self.record:
            self.accesses.append(a)
        return a

    def read_access(self, page: int) -> tuple[bytes, Access]:
        """Page ``page``'s data (empty if never written) and how it was served."""
        from satpage_client.rpc import satpage_pb2 as pb

        t0 = time.perf_counter()
        r = self._call(self.gateway.pages.ReadPage, pb.ReadPageRequest(session_id=self.id, page=page),
                       f"read page {page}")
        a = Access(page, False, r.satellite, _OUTCOMES.get(r.outcome, "?"), r.hops, r.scenario_time_ns,
                   time.perf_counter() - t0)
        self.satellite = r.satellite
        if self.record:
            self.accesses.append(a)
        return bytes(r.data), a

    def read(self, page: int) -> bytes:
        """Page ``page``'s data (empty if never written)."""
        return self.read_access(page)[0]

    def stats(self) -> SessionStats:
        """The serving satellites so far and the costs the relays measured."""
        from satpage_client.rpc import satpage_pb2 as pb

        st = self._call(self.gateway.control.SessionStats, pb.SessionStatsRequest(session_id=self.id), "stats")
        return SessionStats([Handover(v.start_ns, v.satellite) for v in st.visits], st.scenario_time_ns,
                            st.accesses, st.created, st.ondemand_moves, st.ondemand_hops, st.proactive_moves,
                            st.proactive_hops, st.push_moves, st.push_hops,
                            Handover(st.copied_ahead_for.start_ns, st.copied_ahead_for.satellite)
                            if st.HasField("copied_ahead_for") else None)

    def close(self) -> int:
        """End the session (every page is deleted along its trail); returns the pages deleted."""
        from satpage_client.rpc import satpage_pb2 as pb

        if self._closed:
            return 0
        try:
            r = self._call(self.gateway.pages.EndSession, pb.EndSessionRequest(session_id=self.id), "end")
            return int(r.pages_deleted)
        finally:
            self._closed = True
            if self._own_gateway:
                self.gateway.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.close()
        except SessionExpired:
            pass
