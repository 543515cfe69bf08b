from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_LOCAL: _ClassVar[Outcome]
    OUTCOME_CREATED: _ClassVar[Outcome]
    OUTCOME_MOVED: _ClassVar[Outcome]

class Strategy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STRATEGY_UNSPECIFIED: _ClassVar[Strategy]
    STRATEGY_ON_DEMAND: _ClassVar[Strategy]
    STRATEGY_PROACTIVE: _ClassVar[Strategy]
    STRATEGY_PUSH_AHEAD: _ClassVar[Strategy]
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_LOCAL: Outcome
OUTCOME_CREATED: Outcome
OUTCOME_MOVED: Outcome
STRATEGY_UNSPECIFIED: Strategy
STRATEGY_ON_DEMAND: Strategy
STRATEGY_PROACTIVE: Strategy
STRATEGY_PUSH_AHEAD: Strategy

class Route(_message.Message):
    __slots__ = ("origin", "destination", "scenario_time_ns", "hops", "path")
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    origin: int
    destination: int
    scenario_time_ns: int
    hops: int
    path: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, origin: _Optional[int] = ..., destination: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ..., hops: _Optional[int] = ..., path: _Optional[_Iterable[int]] = ...) -> None: ...

class ReadPageRequest(_message.Message):
    __slots__ = ("session_id", "page", "scenario_time_ns", "request_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    page: int
    scenario_time_ns: int
    request_id: str
    def __init__(self, session_id: _Optional[str] = ..., page: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ..., request_id: _Optional[str] = ...) -> None: ...

class ReadPageResponse(_message.Message):
    __slots__ = ("data", "hops", "outcome", "satellite", "previous_owner", "scenario_time_ns", "fault_ns")
    DATA_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SATELLITE_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_OWNER_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    FAULT_NS_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    hops: int
    outcome: Outcome
    satellite: int
    previous_owner: int
    scenario_time_ns: int
    fault_ns: int
    def __init__(self, data: _Optional[bytes] = ..., hops: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., satellite: _Optional[int] = ..., previous_owner: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ..., fault_ns: _Optional[int] = ...) -> None: ...

class ReadPagesRequest(_message.Message):
    __slots__ = ("session_id", "pages", "scenario_time_ns", "omit_data", "request_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    OMIT_DATA_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    pages: _containers.RepeatedScalarFieldContainer[int]
    scenario_time_ns: _containers.RepeatedScalarFieldContainer[int]
    omit_data: bool
    request_id: str
    def __init__(self, session_id: _Optional[str] = ..., pages: _Optional[_Iterable[int]] = ..., scenario_time_ns: _Optional[_Iterable[int]] = ..., omit_data: _Optional[bool] = ..., request_id: _Optional[str] = ...) -> None: ...

class ReadPagesResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[ReadPageResponse]
    def __init__(self, results: _Optional[_Iterable[_Union[ReadPageResponse, _Mapping]]] = ...) -> None: ...

class WritePageRequest(_message.Message):
    __slots__ = ("session_id", "page", "scenario_time_ns", "data", "request_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    page: int
    scenario_time_ns: int
    data: bytes
    request_id: str
    def __init__(self, session_id: _Optional[str] = ..., page: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ..., data: _Optional[bytes] = ..., request_id: _Optional[str] = ...) -> None: ...

class WritePageResponse(_message.Message):
    __slots__ = ("hops", "outcome", "satellite", "scenario_time_ns")
    HOPS_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    SATELLITE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    hops: int
    outcome: Outcome
    satellite: int
    scenario_time_ns: int
    def __init__(self, hops: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., satellite: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ...) -> None: ...

class EndSessionRequest(_message.Message):
    __slots__ = ("session_id", "scenario_time_ns")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    scenario_time_ns: int
    def __init__(self, session_id: _Optional[str] = ..., scenario_time_ns: _Optional[int] = ...) -> None: ...

class EndSessionResponse(_message.Message):
    __slots__ = ("pages_deleted",)
    PAGES_DELETED_FIELD_NUMBER: _ClassVar[int]
    pages_deleted: int
    def __init__(self, pages_deleted: _Optional[int] = ...) -> None: ...

class Visit(_message.Message):
    __slots__ = ("satellite", "start_ns")
    SATELLITE_FIELD_NUMBER: _ClassVar[int]
    START_NS_FIELD_NUMBER: _ClassVar[int]
    satellite: int
    start_ns: int
    def __init__(self, satellite: _Optional[int] = ..., start_ns: _Optional[int] = ...) -> None: ...

class RegisterSessionRequest(_message.Message):
    __slots__ = ("session_id", "visits", "strategy", "table_pages", "place")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VISITS_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    TABLE_PAGES_FIELD_NUMBER: _ClassVar[int]
    PLACE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    visits: _containers.RepeatedCompositeFieldContainer[Visit]
    strategy: Strategy
    table_pages: int
    place: GroundPlace
    def __init__(self, session_id: _Optional[str] = ..., visits: _Optional[_Iterable[_Union[Visit, _Mapping]]] = ..., strategy: _Optional[_Union[Strategy, str]] = ..., table_pages: _Optional[int] = ..., place: _Optional[_Union[GroundPlace, _Mapping]] = ...) -> None: ...

class GroundPlace(_message.Message):
    __slots__ = ("lat_deg", "lon_deg")
    LAT_DEG_FIELD_NUMBER: _ClassVar[int]
    LON_DEG_FIELD_NUMBER: _ClassVar[int]
    lat_deg: float
    lon_deg: float
    def __init__(self, lat_deg: _Optional[float] = ..., lon_deg: _Optional[float] = ...) -> None: ...

class RegisterSessionResponse(_message.Message):
    __slots__ = ("token", "token_expires_unix_s", "table_pages", "ticket")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_EXPIRES_UNIX_S_FIELD_NUMBER: _ClassVar[int]
    TABLE_PAGES_FIELD_NUMBER: _ClassVar[int]
    TICKET_FIELD_NUMBER: _ClassVar[int]
    token: str
    token_expires_unix_s: int
    table_pages: int
    ticket: str
    def __init__(self, token: _Optional[str] = ..., token_expires_unix_s: _Optional[int] = ..., table_pages: _Optional[int] = ..., ticket: _Optional[str] = ...) -> None: ...

class SessionStatsRequest(_message.Message):
    __slots__ = ("session_id", "scenario_time_ns")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    scenario_time_ns: int
    def __init__(self, session_id: _Optional[str] = ..., scenario_time_ns: _Optional[int] = ...) -> None: ...

class SessionStatsResponse(_message.Message):
    __slots__ = ("visit", "table_pages", "frames_by_visit", "ondemand_moves", "ondemand_hops", "proactive_moves", "proactive_hops", "accesses", "created", "visits", "scenario_time_ns", "push_moves", "push_hops", "copied_ahead_for")
    VISIT_FIELD_NUMBER: _ClassVar[int]
    TABLE_PAGES_FIELD_NUMBER: _ClassVar[int]
    FRAMES_BY_VISIT_FIELD_NUMBER: _ClassVar[int]
    ONDEMAND_MOVES_FIELD_NUMBER: _ClassVar[int]
    ONDEMAND_HOPS_FIELD_NUMBER: _ClassVar[int]
    PROACTIVE_MOVES_FIELD_NUMBER: _ClassVar[int]
    PROACTIVE_HOPS_FIELD_NUMBER: _ClassVar[int]
    ACCESSES_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    VISITS_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PUSH_MOVES_FIELD_NUMBER: _ClassVar[int]
    PUSH_HOPS_FIELD_NUMBER: _ClassVar[int]
    COPIED_AHEAD_FOR_FIELD_NUMBER: _ClassVar[int]
    visit: int
    table_pages: _containers.RepeatedScalarFieldContainer[int]
    frames_by_visit: _containers.RepeatedScalarFieldContainer[int]
    ondemand_moves: int
    ondemand_hops: int
    proactive_moves: int
    proactive_hops: int
    accesses: int
    created: int
    visits: _containers.RepeatedCompositeFieldContainer[Visit]
    scenario_time_ns: int
    push_moves: int
    push_hops: int
    copied_ahead_for: Visit
    def __init__(self, visit: _Optional[int] = ..., table_pages: _Optional[_Iterable[int]] = ..., frames_by_visit: _Optional[_Iterable[int]] = ..., ondemand_moves: _Optional[int] = ..., ondemand_hops: _Optional[int] = ..., proactive_moves: _Optional[int] = ..., proactive_hops: _Optional[int] = ..., accesses: _Optional[int] = ..., created: _Optional[int] = ..., visits: _Optional[_Iterable[_Union[Visit, _Mapping]]] = ..., scenario_time_ns: _Optional[int] = ..., push_moves: _Optional[int] = ..., push_hops: _Optional[int] = ..., copied_ahead_for: _Optional[_Union[Visit, _Mapping]] = ...) -> None: ...

class OpenLiveSessionRequest(_message.Message):
    __slots__ = ("lat_deg", "lon_deg", "strategy")
    LAT_DEG_FIELD_NUMBER: _ClassVar[int]
    LON_DEG_FIELD_NUMBER: _ClassVar[int]
    STRATEGY_FIELD_NUMBER: _ClassVar[int]
    lat_deg: float
    lon_deg: float
    strategy: Strategy
    def __init__(self, lat_deg: _Optional[float] = ..., lon_deg: _Optional[float] = ..., strategy: _Optional[_Union[Strategy, str]] = ...) -> None: ...

class OpenLiveSessionResponse(_message.Message):
    __slots__ = ("session_id", "satellite", "scenario_time_ns", "token", "token_expires_unix_s")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SATELLITE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_EXPIRES_UNIX_S_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    satellite: int
    scenario_time_ns: int
    token: str
    token_expires_unix_s: int
    def __init__(self, session_id: _Optional[str] = ..., satellite: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ..., token: _Optional[str] = ..., token_expires_unix_s: _Optional[int] = ...) -> None: ...

class ClockRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ClockResponse(_message.Message):
    __slots__ = ("epoch", "speed", "now_ns", "constellation", "ephemeris_end_ns", "step_ns", "policy", "sticky", "min_elevation_deg", "push_lead_ns", "reallocation_interval_ns", "reallocation_phase_ns")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    NOW_NS_FIELD_NUMBER: _ClassVar[int]
    CONSTELLATION_FIELD_NUMBER: _ClassVar[int]
    EPHEMERIS_END_NS_FIELD_NUMBER: _ClassVar[int]
    STEP_NS_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    STICKY_FIELD_NUMBER: _ClassVar[int]
    MIN_ELEVATION_DEG_FIELD_NUMBER: _ClassVar[int]
    PUSH_LEAD_NS_FIELD_NUMBER: _ClassVar[int]
    REALLOCATION_INTERVAL_NS_FIELD_NUMBER: _ClassVar[int]
    REALLOCATION_PHASE_NS_FIELD_NUMBER: _ClassVar[int]
    epoch: str
    speed: float
    now_ns: int
    constellation: str
    ephemeris_end_ns: int
    step_ns: int
    policy: str
    sticky: bool
    min_elevation_deg: float
    push_lead_ns: int
    reallocation_interval_ns: int
    reallocation_phase_ns: int
    def __init__(self, epoch: _Optional[str] = ..., speed: _Optional[float] = ..., now_ns: _Optional[int] = ..., constellation: _Optional[str] = ..., ephemeris_end_ns: _Optional[int] = ..., step_ns: _Optional[int] = ..., policy: _Optional[str] = ..., sticky: _Optional[bool] = ..., min_elevation_deg: _Optional[float] = ..., push_lead_ns: _Optional[int] = ..., reallocation_interval_ns: _Optional[int] = ..., reallocation_phase_ns: _Optional[int] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("session_id",)
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Page(_message.Message):
    __slots__ = ("page", "data")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    page: int
    data: bytes
    def __init__(self, page: _Optional[int] = ..., data: _Optional[bytes] = ...) -> None: ...

class FetchPagesRequest(_message.Message):
    __slots__ = ("route", "session_id", "pages", "replica_of")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    REPLICA_OF_FIELD_NUMBER: _ClassVar[int]
    route: Route
    session_id: str
    pages: _containers.RepeatedScalarFieldContainer[int]
    replica_of: int
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., session_id: _Optional[str] = ..., pages: _Optional[_Iterable[int]] = ..., replica_of: _Optional[int] = ...) -> None: ...

class FetchPagesResponse(_message.Message):
    __slots__ = ("pages", "hops")
    PAGES_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    pages: _containers.RepeatedCompositeFieldContainer[Page]
    hops: int
    def __init__(self, pages: _Optional[_Iterable[_Union[Page, _Mapping]]] = ..., hops: _Optional[int] = ...) -> None: ...

class FetchStreamRequest(_message.Message):
    __slots__ = ("id", "request", "timeout_ns")
    ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_NS_FIELD_NUMBER: _ClassVar[int]
    id: int
    request: FetchPagesRequest
    timeout_ns: int
    def __init__(self, id: _Optional[int] = ..., request: _Optional[_Union[FetchPagesRequest, _Mapping]] = ..., timeout_ns: _Optional[int] = ...) -> None: ...

class FetchStreamResponse(_message.Message):
    __slots__ = ("id", "response", "status")
    ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    id: int
    response: FetchPagesResponse
    status: bytes
    def __init__(self, id: _Optional[int] = ..., response: _Optional[_Union[FetchPagesResponse, _Mapping]] = ..., status: _Optional[bytes] = ...) -> None: ...

class ReadStreamRequest(_message.Message):
    __slots__ = ("id", "request", "timeout_ns")
    ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_NS_FIELD_NUMBER: _ClassVar[int]
    id: int
    request: ReadPageRequest
    timeout_ns: int
    def __init__(self, id: _Optional[int] = ..., request: _Optional[_Union[ReadPageRequest, _Mapping]] = ..., timeout_ns: _Optional[int] = ...) -> None: ...

class ReadStreamResponse(_message.Message):
    __slots__ = ("id", "response", "status")
    ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    id: int
    response: ReadPageResponse
    status: bytes
    def __init__(self, id: _Optional[int] = ..., response: _Optional[_Union[ReadPageResponse, _Mapping]] = ..., status: _Optional[bytes] = ...) -> None: ...

class ReleasePagesRequest(_message.Message):
    __slots__ = ("route", "session_id", "pages", "new_owner")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    NEW_OWNER_FIELD_NUMBER: _ClassVar[int]
    route: Route
    session_id: str
    pages: _containers.RepeatedScalarFieldContainer[int]
    new_owner: int
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., session_id: _Optional[str] = ..., pages: _Optional[_Iterable[int]] = ..., new_owner: _Optional[int] = ...) -> None: ...

class ReleasePagesResponse(_message.Message):
    __slots__ = ("released", "hops")
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    released: int
    hops: int
    def __init__(self, released: _Optional[int] = ..., hops: _Optional[int] = ...) -> None: ...

class HandOverRequest(_message.Message):
    __slots__ = ("session_id", "to_satellite", "scenario_time_ns")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TO_SATELLITE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    to_satellite: int
    scenario_time_ns: int
    def __init__(self, session_id: _Optional[str] = ..., to_satellite: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ...) -> None: ...

class HandOverResponse(_message.Message):
    __slots__ = ("table_pages", "hops")
    TABLE_PAGES_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    table_pages: int
    hops: int
    def __init__(self, table_pages: _Optional[int] = ..., hops: _Optional[int] = ...) -> None: ...

class TableEntry(_message.Message):
    __slots__ = ("page", "owner")
    PAGE_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    page: int
    owner: int
    def __init__(self, page: _Optional[int] = ..., owner: _Optional[int] = ...) -> None: ...

class AcceptTableRequest(_message.Message):
    __slots__ = ("route", "session_id", "entries", "version")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    route: Route
    session_id: str
    entries: _containers.RepeatedCompositeFieldContainer[TableEntry]
    version: int
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., session_id: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[TableEntry, _Mapping]]] = ..., version: _Optional[int] = ...) -> None: ...

class AcceptTableResponse(_message.Message):
    __slots__ = ("hops",)
    HOPS_FIELD_NUMBER: _ClassVar[int]
    hops: int
    def __init__(self, hops: _Optional[int] = ...) -> None: ...

class MovePagesRequest(_message.Message):
    __slots__ = ("session_id", "scenario_time_ns", "pages", "request_id")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    scenario_time_ns: int
    pages: _containers.RepeatedScalarFieldContainer[int]
    request_id: str
    def __init__(self, session_id: _Optional[str] = ..., scenario_time_ns: _Optional[int] = ..., pages: _Optional[_Iterable[int]] = ..., request_id: _Optional[str] = ...) -> None: ...

class MovePagesResponse(_message.Message):
    __slots__ = ("moved", "page_hops")
    MOVED_FIELD_NUMBER: _ClassVar[int]
    PAGE_HOPS_FIELD_NUMBER: _ClassVar[int]
    moved: int
    page_hops: int
    def __init__(self, moved: _Optional[int] = ..., page_hops: _Optional[int] = ...) -> None: ...

class SessionFramesRequest(_message.Message):
    __slots__ = ("session_id", "copy_of")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    COPY_OF_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    copy_of: int
    def __init__(self, session_id: _Optional[str] = ..., copy_of: _Optional[int] = ...) -> None: ...

class SessionFramesResponse(_message.Message):
    __slots__ = ("frames", "serving", "table_pages")
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    TABLE_PAGES_FIELD_NUMBER: _ClassVar[int]
    frames: int
    serving: bool
    table_pages: int
    def __init__(self, frames: _Optional[int] = ..., serving: _Optional[bool] = ..., table_pages: _Optional[int] = ...) -> None: ...

class DropSessionRequest(_message.Message):
    __slots__ = ("route", "session_id", "taken_over")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TAKEN_OVER_FIELD_NUMBER: _ClassVar[int]
    route: Route
    session_id: str
    taken_over: bool
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., session_id: _Optional[str] = ..., taken_over: _Optional[bool] = ...) -> None: ...

class DropSessionResponse(_message.Message):
    __slots__ = ("frames_deleted", "hops")
    FRAMES_DELETED_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    frames_deleted: int
    hops: int
    def __init__(self, frames_deleted: _Optional[int] = ..., hops: _Optional[int] = ...) -> None: ...

class StoreOp(_message.Message):
    __slots__ = ("kind", "session_id", "frames", "pages", "owner", "table", "answer_session", "answer")
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        KIND_UNSPECIFIED: _ClassVar[StoreOp.Kind]
        KIND_PING: _ClassVar[StoreOp.Kind]
        KIND_OPEN_TABLE: _ClassVar[StoreOp.Kind]
        KIND_PUT_TABLE: _ClassVar[StoreOp.Kind]
        KIND_SET_OWNER: _ClassVar[StoreOp.Kind]
        KIND_DELETE_TABLE: _ClassVar[StoreOp.Kind]
        KIND_PUT_FRAMES: _ClassVar[StoreOp.Kind]
        KIND_DELETE_FRAMES: _ClassVar[StoreOp.Kind]
        KIND_DROP_FRAMES: _ClassVar[StoreOp.Kind]
        KIND_ADOPT_FRAMES: _ClassVar[StoreOp.Kind]
        KIND_RELEASE_FRAMES: _ClassVar[StoreOp.Kind]
        KIND_ADOPT_ANSWERED: _ClassVar[StoreOp.Kind]
    KIND_UNSPECIFIED: StoreOp.Kind
    KIND_PING: StoreOp.Kind
    KIND_OPEN_TABLE: StoreOp.Kind
    KIND_PUT_TABLE: StoreOp.Kind
    KIND_SET_OWNER: StoreOp.Kind
    KIND_DELETE_TABLE: StoreOp.Kind
    KIND_PUT_FRAMES: StoreOp.Kind
    KIND_DELETE_FRAMES: StoreOp.Kind
    KIND_DROP_FRAMES: StoreOp.Kind
    KIND_ADOPT_FRAMES: StoreOp.Kind
    KIND_RELEASE_FRAMES: StoreOp.Kind
    KIND_ADOPT_ANSWERED: StoreOp.Kind
    KIND_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ANSWER_SESSION_FIELD_NUMBER: _ClassVar[int]
    ANSWER_FIELD_NUMBER: _ClassVar[int]
    kind: StoreOp.Kind
    session_id: str
    frames: _containers.RepeatedCompositeFieldContainer[Page]
    pages: _containers.RepeatedScalarFieldContainer[int]
    owner: int
    table: _containers.RepeatedCompositeFieldContainer[TableEntry]
    answer_session: str
    answer: Page
    def __init__(self, kind: _Optional[_Union[StoreOp.Kind, str]] = ..., session_id: _Optional[str] = ..., frames: _Optional[_Iterable[_Union[Page, _Mapping]]] = ..., pages: _Optional[_Iterable[int]] = ..., owner: _Optional[int] = ..., table: _Optional[_Iterable[_Union[TableEntry, _Mapping]]] = ..., answer_session: _Optional[str] = ..., answer: _Optional[_Union[Page, _Mapping]] = ...) -> None: ...

class ReplicaVersion(_message.Message):
    __slots__ = ("incarnation", "seq", "epoch")
    INCARNATION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    incarnation: int
    seq: int
    epoch: int
    def __init__(self, incarnation: _Optional[int] = ..., seq: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class ReplicateRequest(_message.Message):
    __slots__ = ("route", "namespace", "sync_id", "version", "op")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SYNC_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    OP_FIELD_NUMBER: _ClassVar[int]
    route: Route
    namespace: int
    sync_id: int
    version: ReplicaVersion
    op: StoreOp
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., namespace: _Optional[int] = ..., sync_id: _Optional[int] = ..., version: _Optional[_Union[ReplicaVersion, _Mapping]] = ..., op: _Optional[_Union[StoreOp, _Mapping]] = ...) -> None: ...

class ReplicateResponse(_message.Message):
    __slots__ = ("hops",)
    HOPS_FIELD_NUMBER: _ClassVar[int]
    hops: int
    def __init__(self, hops: _Optional[int] = ...) -> None: ...

class SessionState(_message.Message):
    __slots__ = ("session_id", "has_table", "table", "frames")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_TABLE_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    has_table: bool
    table: _containers.RepeatedCompositeFieldContainer[TableEntry]
    frames: _containers.RepeatedCompositeFieldContainer[Page]
    def __init__(self, session_id: _Optional[str] = ..., has_table: _Optional[bool] = ..., table: _Optional[_Iterable[_Union[TableEntry, _Mapping]]] = ..., frames: _Optional[_Iterable[_Union[Page, _Mapping]]] = ...) -> None: ...

class InstallSnapshotRequest(_message.Message):
    __slots__ = ("route", "namespace", "sync_id", "version", "first", "last", "sessions")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SYNC_ID_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    FIRST_FIELD_NUMBER: _ClassVar[int]
    LAST_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    route: Route
    namespace: int
    sync_id: int
    version: ReplicaVersion
    first: bool
    last: bool
    sessions: _containers.RepeatedCompositeFieldContainer[SessionState]
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., namespace: _Optional[int] = ..., sync_id: _Optional[int] = ..., version: _Optional[_Union[ReplicaVersion, _Mapping]] = ..., first: _Optional[bool] = ..., last: _Optional[bool] = ..., sessions: _Optional[_Iterable[_Union[SessionState, _Mapping]]] = ...) -> None: ...

class InstallSnapshotResponse(_message.Message):
    __slots__ = ("hops",)
    HOPS_FIELD_NUMBER: _ClassVar[int]
    hops: int
    def __init__(self, hops: _Optional[int] = ...) -> None: ...

class ReplicaStateRequest(_message.Message):
    __slots__ = ("namespace", "snapshot", "sessions")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    namespace: int
    snapshot: bool
    sessions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[int] = ..., snapshot: _Optional[bool] = ..., sessions: _Optional[_Iterable[str]] = ...) -> None: ...

class TakeOverRequest(_message.Message):
    __slots__ = ("session_id", "failed", "scenario_time_ns")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    failed: int
    scenario_time_ns: int
    def __init__(self, session_id: _Optional[str] = ..., failed: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ...) -> None: ...

class TakeOverResponse(_message.Message):
    __slots__ = ("table_pages", "pages_adopted", "copy_at", "epoch")
    TABLE_PAGES_FIELD_NUMBER: _ClassVar[int]
    PAGES_ADOPTED_FIELD_NUMBER: _ClassVar[int]
    COPY_AT_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    table_pages: int
    pages_adopted: int
    copy_at: int
    epoch: int
    def __init__(self, table_pages: _Optional[int] = ..., pages_adopted: _Optional[int] = ..., copy_at: _Optional[int] = ..., epoch: _Optional[int] = ...) -> None: ...

class ForgetCopyRequest(_message.Message):
    __slots__ = ("namespace", "sessions")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    namespace: int
    sessions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[int] = ..., sessions: _Optional[_Iterable[str]] = ...) -> None: ...

class FenceCopyRequest(_message.Message):
    __slots__ = ("namespace", "sessions")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    namespace: int
    sessions: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, namespace: _Optional[int] = ..., sessions: _Optional[_Iterable[str]] = ...) -> None: ...

class FenceCopyResponse(_message.Message):
    __slots__ = ("synced", "version", "sessions")
    SYNCED_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    synced: bool
    version: ReplicaVersion
    sessions: _containers.RepeatedCompositeFieldContainer[SessionState]
    def __init__(self, synced: _Optional[bool] = ..., version: _Optional[_Union[ReplicaVersion, _Mapping]] = ..., sessions: _Optional[_Iterable[_Union[SessionState, _Mapping]]] = ...) -> None: ...

class ForgetCopyResponse(_message.Message):
    __slots__ = ("held",)
    HELD_FIELD_NUMBER: _ClassVar[int]
    held: bool
    def __init__(self, held: _Optional[bool] = ...) -> None: ...

class ReplicaStateResponse(_message.Message):
    __slots__ = ("synced", "version", "sessions", "generation", "started")
    SYNCED_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    synced: bool
    version: ReplicaVersion
    sessions: _containers.RepeatedCompositeFieldContainer[SessionState]
    generation: str
    started: bool
    def __init__(self, synced: _Optional[bool] = ..., version: _Optional[_Union[ReplicaVersion, _Mapping]] = ..., sessions: _Optional[_Iterable[_Union[SessionState, _Mapping]]] = ..., generation: _Optional[str] = ..., started: _Optional[bool] = ...) -> None: ...

class RequestSyncRequest(_message.Message):
    __slots__ = ("replica",)
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    replica: int
    def __init__(self, replica: _Optional[int] = ...) -> None: ...

class RequestSyncResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Link(_message.Message):
    __slots__ = ("a", "b")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    a: int
    b: int
    def __init__(self, a: _Optional[int] = ..., b: _Optional[int] = ...) -> None: ...

class SetFaultsRequest(_message.Message):
    __slots__ = ("cut", "ground_cut")
    CUT_FIELD_NUMBER: _ClassVar[int]
    GROUND_CUT_FIELD_NUMBER: _ClassVar[int]
    cut: _containers.RepeatedCompositeFieldContainer[Link]
    ground_cut: bool
    def __init__(self, cut: _Optional[_Iterable[_Union[Link, _Mapping]]] = ..., ground_cut: _Optional[bool] = ...) -> None: ...

class SetFaultsResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CopyAheadRequest(_message.Message):
    __slots__ = ("session_id", "to_satellite", "scenario_time_ns", "pages")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    TO_SATELLITE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    to_satellite: int
    scenario_time_ns: int
    pages: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, session_id: _Optional[str] = ..., to_satellite: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ..., pages: _Optional[_Iterable[int]] = ...) -> None: ...

class CopyAheadResponse(_message.Message):
    __slots__ = ("copied", "page_hops")
    COPIED_FIELD_NUMBER: _ClassVar[int]
    PAGE_HOPS_FIELD_NUMBER: _ClassVar[int]
    copied: _containers.RepeatedScalarFieldContainer[int]
    page_hops: int
    def __init__(self, copied: _Optional[_Iterable[int]] = ..., page_hops: _Optional[int] = ...) -> None: ...

class StagePagesRequest(_message.Message):
    __slots__ = ("route", "session_id", "pages")
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    route: Route
    session_id: str
    pages: _containers.RepeatedCompositeFieldContainer[Page]
    def __init__(self, route: _Optional[_Union[Route, _Mapping]] = ..., session_id: _Optional[str] = ..., pages: _Optional[_Iterable[_Union[Page, _Mapping]]] = ...) -> None: ...

class StagePagesResponse(_message.Message):
    __slots__ = ("staged", "hops")
    STAGED_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    staged: int
    hops: int
    def __init__(self, staged: _Optional[int] = ..., hops: _Optional[int] = ...) -> None: ...

class ClaimPagesRequest(_message.Message):
    __slots__ = ("session_id", "from_satellite", "scenario_time_ns", "pages")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_SATELLITE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    PAGES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    from_satellite: int
    scenario_time_ns: int
    pages: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, session_id: _Optional[str] = ..., from_satellite: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ..., pages: _Optional[_Iterable[int]] = ...) -> None: ...

class ClaimPagesResponse(_message.Message):
    __slots__ = ("claimed", "moved", "page_hops")
    CLAIMED_FIELD_NUMBER: _ClassVar[int]
    MOVED_FIELD_NUMBER: _ClassVar[int]
    PAGE_HOPS_FIELD_NUMBER: _ClassVar[int]
    claimed: int
    moved: int
    page_hops: int
    def __init__(self, claimed: _Optional[int] = ..., moved: _Optional[int] = ..., page_hops: _Optional[int] = ...) -> None: ...
