"""satpage_client.errinfo reads the reason a service error carries, never its text."""

from __future__ import annotations

import grpc
import pytest

from satpage_client import errinfo
from satpage.client import PageLost, SatpageError, SessionExpired, Unavailable, _translate


def _len(field: int, payload: bytes) -> bytes:
    out, n = bytearray([field << 3 | 2]), len(payload)
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + payload


def _status(code: int, message: str, reason: str, domain: str = "satpage") -> bytes:
    """A google.rpc.Status with one ErrorInfo, encoded as protobuf does."""
    info = _len(1, reason.encode()) + _len(2, domain.encode())
    any_ = _len(1, b"type.googleapis.com/google.rpc.ErrorInfo") + _len(2, info)
    return bytes([0x08, code]) + _len(2, message.encode()) + _len(3, any_)


class _Error(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode, message: str, trailer: bytes | None):
        self._code, self._message = code, message
        self._trailers = () if trailer is None else (("grpc-status-details-bin", trailer),)

    def code(self):
        return self._code

    def details(self):
        return self._message

    def trailing_metadata(self):
        return self._trailers


@pytest.mark.parametrize(("code", "reason", "kind"), [
    (grpc.StatusCode.NOT_FOUND, "UNKNOWN_SESSION", SessionExpired),
    (grpc.StatusCode.NOT_FOUND, "PAGE_NOT_FOUND", PageLost),
    (grpc.StatusCode.UNAVAILABLE, "NO_ROUTE", Unavailable),
    (grpc.StatusCode.FAILED_PRECONDITION, "STALE_EPOCH", SatpageError),
])
def test_the_client_types_an_error_by_its_reason(code, reason, kind):
    # The message says "session" for a lost page too: only the reason decides.
    exc = _Error(code, "session 'x' page 3: not found", _status(code.value[0], "m", reason))
    assert errinfo.reason(exc) == reason
    err = _translate(exc, "read")
    assert type(err) is kind
    assert err.reason == reason and err.code == code.name


def test_an_error_without_a_satpage_reason_has_none():
    plain = _Error(grpc.StatusCode.NOT_FOUND, "has no page table", None)
    assert errinfo.reason(plain) == ""
    assert type(_translate(plain, "read")) is SatpageError
    other = _Error(grpc.StatusCode.NOT_FOUND, "x", _status(5, "m", "UNKNOWN_SESSION", domain="other.example"))
    assert errinfo.reason(other) == ""
    assert errinfo.reason(_Error(grpc.StatusCode.NOT_FOUND, "x", b"\xff\xff")) == ""
