"""gRPC channels to a satpage gateway or satellite: mutual TLS 1.3 with the
material of a TLS directory (docs/security.md), or plain text for a cluster
started with ``--insecure``; and the session token in call metadata."""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["TICKET_METADATA_KEY", "TOKEN_METADATA_KEY", "insecure_channel", "open_channel", "register_tls_dir",
           "secure_channel", "tls_dir_for", "token_metadata"]

#: gRPC metadata key of the session capability token.
TOKEN_METADATA_KEY = "satpage-token"
#: gRPC metadata key of the session's ticket: its registration, signed by the gateway,
#: from which another gateway serves the session (docs/faults.md, "Lost gateways").
TICKET_METADATA_KEY = "satpage-ticket"
GATEWAY_SERVER_NAME = "gateway.satpage"


def token_metadata(token: str, ticket: str = "") -> tuple[tuple[str, str], ...]:
    """Call metadata carrying token (none for an insecure cluster's empty token) and the
    session's ticket (RegisterSessionResponse.ticket), when there is one."""
    return (((TOKEN_METADATA_KEY, token),) if token else ()) + (((TICKET_METADATA_KEY, ticket),) if ticket else ())


def secure_channel(target: str, tls_dir: Path, *, server_name: str = GATEWAY_SERVER_NAME,
                   client_cert: bool = True, options: list | None = None):
    """A channel to target trusting tls_dir/ca.pem and checking the server's
    certificate names server_name; with client_cert, presenting client.pem."""
    import grpc

    d = Path(tls_dir)
    try:
        ca = (d / "ca.pem").read_bytes()
        key = (d / "client-key.pem").read_bytes() if client_cert else None
        cert = (d / "client.pem").read_bytes() if client_cert else None
    except OSError as exc:
        raise OSError(f"TLS material in {d}: {exc.strerror or exc}: {exc.filename}") from None
    creds = grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)
    opts = list(options or []) + [("grpc.ssl_target_name_override", server_name)]
    return grpc.secure_channel(target, creds, options=opts)


def insecure_channel(target: str, *, options: list | None = None):
    """Plain text (a cluster started with ``--insecure`` only)."""
    import grpc

    return grpc.insecure_channel(target, options=options or [])


#: TLS directories of clusters started in this process (gateway -> tls_dir).
_KNOWN: dict[str, str] = {}


def register_tls_dir(gateway: str, tls_dir: str | None) -> None:
    """Remember (or with None forget) the TLS directory of a cluster this process started."""
    if tls_dir is None:
        _KNOWN.pop(gateway, None)
    else:
        _KNOWN[gateway] = tls_dir


def tls_dir_for(target: str) -> Path | None:
    """The TLS directory to reach target with: ``$SATPAGE_TLS_DIR``; else that of
    a cluster this process started (register_tls_dir); else the tls_dir of the
    local cluster recorded in ``$SATPAGE_CLUSTER_DIR`` (default .cluster) when
    its gateway is target; else None (plain text)."""
    env = os.environ.get("SATPAGE_TLS_DIR")
    if env:
        return Path(env)
    if target in _KNOWN:
        return Path(_KNOWN[target])
    # cluster.json is the local cluster's record (satpage.cluster.local writes it);
    # read here as plain JSON so that the client needs no simulator.
    path = Path(os.environ.get("SATPAGE_CLUSTER_DIR", ".cluster")) / "cluster.json"
    try:
        st = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if isinstance(st, dict) and st.get("gateway") == target and st.get("tls_dir"):
        return Path(st["tls_dir"])
    return None


def open_channel(target: str, tls_dir: Path | None, *, options: list | None = None):
    """secure_channel when tls_dir is given, else insecure_channel."""
    if tls_dir is None:
        return insecure_channel(target, options=options)
    return secure_channel(target, tls_dir, options=options)
