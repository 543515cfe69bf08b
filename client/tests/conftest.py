"""Shared by the client's tests: a gRPC error's details as the Go services send them."""

from __future__ import annotations

import pytest


def _len(field: int, payload: bytes) -> bytes:
    out, n = bytearray([field << 3 | 2]), len(payload)
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + payload


def status_details(code: int, message: str, reason: str, domain: str = "satpage") -> bytes:
    """A google.rpc.Status holding one google.rpc.ErrorInfo, encoded as protobuf
    does: the value of the ``grpc-status-details-bin`` trailer."""
    info = _len(1, reason.encode()) + _len(2, domain.encode())
    any_ = _len(1, b"type.googleapis.com/google.rpc.ErrorInfo") + _len(2, info)
    return bytes([0x08, code]) + _len(2, message.encode()) + _len(3, any_)


@pytest.fixture
def error_details():
    return status_details
