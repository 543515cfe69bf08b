#!/usr/bin/env python3
"""Wait until a DNS server answers NAME with the address IP (an A record).

Usage: dns-wait.py NAME IP SERVER [TIMEOUT_S]

make e2e-k8s's kill command uses it: a satellite pod made again is Ready before the
cluster DNS gives its name the new address (the endpoints update, then the cache
expires), and the peers dial it by name. Exits 0 once the answer holds IP, 1 after
TIMEOUT_S (default 60) seconds, printing the last answer. One UDP query at a time,
stdlib only (RFC 1035 message format).
"""

from __future__ import annotations

import random
import socket
import struct
import sys
import time


def query(name: str, server: str, timeout_s: float = 1.0) -> list[str]:
    """The A records the server gives name (empty on NXDOMAIN, SERVFAIL or no answer)."""
    qid = random.randrange(1 << 16)
    qname = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    msg = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0) + qname + struct.pack(">HH", 1, 1)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(timeout_s)
        s.sendto(msg, (server, 53))
        try:
            data = s.recv(4096)
        except OSError:
            return []
    rid, flags, qd, an = struct.unpack(">HHHH", data[:8])
    if rid != qid or flags & 0x000F:  # another reply, or an error rcode
        return []
    at = 12
    for _ in range(qd):  # skip the question
        while data[at]:
            at += 1 + data[at]
        at += 5
    out = []
    for _ in range(an):
        if data[at] & 0xC0 == 0xC0:  # a compressed name
            at += 2
        else:
            while data[at]:
                at += 1 + data[at]
            at += 1
        rtype, _cls, _ttl, rdlen = struct.unpack(">HHIH", data[at:at + 10])
        at += 10
        if rtype == 1 and rdlen == 4:
            out.append(socket.inet_ntoa(data[at:at + 4]))
        at += rdlen
    return out


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    name, ip, server = argv[:3]
    timeout_s = float(argv[3]) if len(argv) == 4 else 60.0
    t0 = time.monotonic()
    got: list[str] = []
    while time.monotonic() - t0 < timeout_s:
        got = query(name, server)
        if ip in got:
            return 0
        time.sleep(0.25)
    print(f"dns-wait: {name} at {server} answers {got or 'nothing'}, not {ip}, after {timeout_s:g} s",
          file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
