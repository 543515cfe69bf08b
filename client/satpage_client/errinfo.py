"""satpage_client.errinfo: the reason a satpage service error carries (google.rpc.ErrorInfo, domain "satpage").

gRPC codes are shared by several causes: NOT_FOUND is both a session the
service no longer knows and a page that was lost, UNAVAILABLE both a satellite
that refused and a missing ISL route. The Go services attach to every error of
their own a ``google.rpc.ErrorInfo`` (services/internal/errs: ``Reason*``) in
the status details, which gRPC sends as the ``grpc-status-details-bin``
trailer. Callers decide on that reason, never on the message text.

The trailer is a ``google.rpc.Status`` (field 3: repeated ``google.protobuf.Any``);
an ``Any`` holds ``type_url`` (1) and ``value`` (2); an ``ErrorInfo`` holds
``reason`` (1) and ``domain`` (2). They are decoded here from the protobuf wire
format, so no googleapis package is needed.
"""

from __future__ import annotations

import grpc

__all__ = ["DOMAIN", "UNKNOWN_SESSION", "PAGE_NOT_FOUND", "STALE_EPOCH", "SATELLITE_SILENT", "NO_ROUTE",
           "NOT_SERVING", "NO_FAILOVER", "reason", "StreamError"]

DOMAIN = "satpage"
UNKNOWN_SESSION = "UNKNOWN_SESSION"  # no page table (satellite) or no registration (gateway)
PAGE_NOT_FOUND = "PAGE_NOT_FOUND"  # a page frame or page-table entry is not held (a lost page)
STALE_EPOCH = "STALE_EPOCH"  # a fenced satellite's change, refused (docs/faults.md)
SATELLITE_SILENT = "SATELLITE_SILENT"  # no answer within the deadline (paused or slow)
NO_ROUTE = "NO_ROUTE"  # no ISL path at the scenario time
NOT_SERVING = "NOT_SERVING"  # the session's table is held by another satellite
NO_FAILOVER = "NO_FAILOVER"  # the session cannot be taken over (R = 1, or its server is alive)

_DETAILS_KEY = "grpc-status-details-bin"
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, i
        shift += 7


def _scan(buf: bytes):
    """(number, wire type, value) of each field of one message: an int for a varint, the bytes of a
    length-delimited field; fixed-width fields are skipped."""
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            yield number, wire, value
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = _varint(buf, i)
            yield number, wire, buf[i:i + n]
            i += n
        else:
            raise ValueError(f"wire type {wire} of field {number} is not supported")


def _fields(buf: bytes) -> dict[int, list[bytes]]:
    """The length-delimited fields of one message, by number (others skipped)."""
    out: dict[int, list[bytes]] = {}
    for number, wire, value in _scan(buf):
        if wire == 2:
            out.setdefault(number, []).append(value)
    return out


def reason(exc) -> str:
    """The satpage ErrorInfo reason of a ``grpc.RpcError`` ("" when it has none)."""
    trailers = exc.trailing_metadata() if hasattr(exc, "trailing_metadata") else None
    for key, value in trailers or ():
        if key != _DETAILS_KEY:
            continue
        try:
            for detail in _fields(value).get(3, []):
                any_ = _fields(detail)
                if any_.get(1, [b""])[0].decode() != _ERROR_INFO:
                    continue
                info = _fields(any_.get(2, [b""])[0])
                if info.get(2, [b""])[0].decode() == DOMAIN:
                    return info.get(1, [b""])[0].decode()
        except (IndexError, ValueError, UnicodeDecodeError):
            return ""
    return ""


def _code_message(buf: bytes) -> tuple[int, str]:
    """A google.rpc.Status's code (field 1, varint) and message (field 2)."""
    code, message = 0, ""
    for number, wire, value in _scan(buf):
        if (number, wire) == (1, 0):
            code = value
        elif (number, wire) == (2, 2):
            message = value.decode()
    return code, message


class StreamError(grpc.RpcError):
    """The error in a stream's answer (``PageService.ReadStream``: the ``status`` field, a serialised
    google.rpc.Status) as the ``grpc.RpcError`` the unary call raises: ``code()``, ``details()``, and
    the status as its details trailer, so that ``reason`` reads it. Bytes that do not decode, or say
    OK, are INTERNAL (as the Go services read them)."""

    def __init__(self, status: bytes):
        try:
            number, message = _code_message(status)
            code = next(c for c in grpc.StatusCode if c.value[0] == number and number != 0)
        except (IndexError, ValueError, UnicodeDecodeError, StopIteration):
            code, message, status = grpc.StatusCode.INTERNAL, "malformed status in a stream's answer", b""
        super().__init__(f"{code.name}: {message}")
        self._code, self._message, self._status = code, message, status

    def code(self):
        return self._code

    def details(self):
        return self._message

    def trailing_metadata(self):
        return ((_DETAILS_KEY, self._status),) if self._status else ()
