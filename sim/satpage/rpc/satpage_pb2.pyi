from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class ReadPageRequest(_message.Message):
    __slots__ = ("session_id", "page", "scenario_time_ns")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    PAGE_FIELD_NUMBER: _ClassVar[int]
    SCENARIO_TIME_NS_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    page: int
    scenario_time_ns: int
    def __init__(self, session_id: _Optional[str] = ..., page: _Optional[int] = ..., scenario_time_ns: _Optional[int] = ...) -> None: ...

class ReadPageResponse(_message.Message):
    __slots__ = ("data", "hops")
    DATA_FIELD_NUMBER: _ClassVar[int]
    HOPS_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    hops: int
    def __init__(self, data: _Optional[bytes] = ..., hops: _Optional[int] = ...) -> None: ...
