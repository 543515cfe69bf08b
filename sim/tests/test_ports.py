"""Loopback port checks of the local cluster (satpage.cluster.local)."""

import socket

from satpage.cluster.local import _port_free


def _time_wait_port() -> int:
    """A loopback port whose only socket sits in TIME_WAIT, as a stopped daemon leaves
    it: its listener had SO_REUSEADDR (Go's net.Listen and redis-server set it; the
    TIME_WAIT socket keeps the flag, and Linux lets a new SO_REUSEADDR bind beside it
    only then); it served a connection and closed it first (the side that closes first
    keeps TIME_WAIT); then the listener closed."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        cli = socket.create_connection(("127.0.0.1", port))
        conn, _ = srv.accept()
        conn.close()                 # the server closes first: its socket goes TIME_WAIT
        cli.recv(1)                  # the FIN arrives; the client closes in turn
        cli.close()
    return port


def _states(port: int) -> set[str]:
    """TCP states of the sockets on the local loopback port (from /proc/net/tcp)."""
    names = {"01": "ESTABLISHED", "06": "TIME_WAIT", "0A": "LISTEN", "08": "CLOSE_WAIT"}
    out = set()
    with open("/proc/net/tcp") as fh:
        for line in fh.readlines()[1:]:
            local, st = line.split()[1], line.split()[3]
            if int(local.split(":")[1], 16) == port:
                out.add(names.get(st, st))
    return out


def test_a_port_in_time_wait_counts_free_as_the_daemons_would_bind_it():
    port = _time_wait_port()
    assert "TIME_WAIT" in _states(port)
    # without SO_REUSEADDR the bind fails (what `cluster up` did before) ...
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            plain_bind = True
        except OSError:
            plain_bind = False
    assert not plain_bind
    # ... and a daemon's listener (SO_REUSEADDR, as Go and redis set it) binds fine
    assert _port_free(port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen(1)


def test_a_port_with_a_listener_counts_taken():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        assert not _port_free(srv.getsockname()[1])


def test_a_daemon_that_could_not_bind_its_port_is_ports_taken_and_others_are_not(tmp_path):
    from satpage.cluster.local import PortsTaken, _exited

    log = tmp_path / "satnode-1.log"
    log.write_text('{"level":"WARN","msg":"the floor under a page fault"}\n'
                   'floornode: listen on "127.0.0.1:18424": listen tcp 127.0.0.1:18424: bind: '
                   "address already in use\n")
    err = _exited("satnode 1 (pid 7) exited while waiting for satnodes to listen", log)
    assert isinstance(err, PortsTaken) and "18424" in str(err) and str(log) in str(err)
    log.write_text("satnode: --replicas 9: more than the satellites\n")
    err = _exited("satnode 1 (pid 7) exited at once", log)
    assert type(err) is OSError and "--replicas 9" in str(err)
