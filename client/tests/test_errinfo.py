"""satpage_client.errinfo reads the reason a service error carries, never its text."""

from __future__ import annotations

import grpc
import pytest

from satpage_client import PageLost, SatpageError, SessionExpired, Unavailable, _translate, errinfo


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
def test_the_client_types_an_error_by_its_reason(code, reason, kind, error_details):
    # The message says "session" for a lost page too: only the reason decides.
    exc = _Error(code, "session 'x' page 3: not found", error_details(code.value[0], "m", reason))
    assert errinfo.reason(exc) == reason
    err = _translate(exc, "read")
    assert type(err) is kind
    assert err.reason == reason and err.code == code.name


def test_an_error_without_a_satpage_reason_has_none(error_details):
    plain = _Error(grpc.StatusCode.NOT_FOUND, "has no page table", None)
    assert errinfo.reason(plain) == ""
    assert type(_translate(plain, "read")) is SatpageError
    other = _Error(grpc.StatusCode.NOT_FOUND, "x", error_details(5, "m", "UNKNOWN_SESSION", domain="other.example"))
    assert errinfo.reason(other) == ""
    assert errinfo.reason(_Error(grpc.StatusCode.NOT_FOUND, "x", b"\xff\xff")) == ""


def test_a_stream_answers_error_is_the_unary_calls(error_details):
    status = error_details(grpc.StatusCode.NOT_FOUND.value[0], "session 'x': unknown session", "UNKNOWN_SESSION")
    exc = errinfo.StreamError(status)
    assert isinstance(exc, grpc.RpcError)
    assert exc.code() == grpc.StatusCode.NOT_FOUND and exc.details() == "session 'x': unknown session"
    assert errinfo.reason(exc) == "UNKNOWN_SESSION"
    assert type(_translate(exc, "read")) is SessionExpired
    for bad in (b"\xff\xff", b"", error_details(0, "ok", "UNKNOWN_SESSION")):
        exc = errinfo.StreamError(bad)
        assert exc.code() == grpc.StatusCode.INTERNAL and errinfo.reason(exc) == ""
