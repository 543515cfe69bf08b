"""`satpage deploy ...`: render deployment files for a constellation or a scenario.

- ``satpage deploy values``: a Helm values file for charts/satpage (constellation
  spec, Redis sized for the scenario's pages), for a plain ``helm install -f``.
- ``satpage deploy stack``: the Docker Swarm stack file (one satnode service and one
  Redis service per satellite, ``endpoint_mode: dnsrr``, and the gateway).
- ``satpage deploy links``: the compressed link ephemeris that times a deployment's
  links (docs/emulation.md), for a ConfigMap (charts/satpage ``links.configMap``) or
  the stack's Docker config.

They only write files; nothing is deployed. The checked-in
charts/swarm/satpage-stack.yml is ``satpage deploy stack`` for the default
constellation (a test keeps them equal).
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Annotated

import typer

from satpage import __version__
from satpage.console import fail

__all__ = [
    "ImageSet",
    "RedisSizing",
    "app",
    "redis_sizing",
    "render_stack",
    "render_values",
    "satellite_count",
    "write_links",
]

DEFAULT_SPEC = "walker-star:150/10/1:500:87"
DEFAULT_REGISTRY = "satpage.local"
SWARM_GATEWAY_PORT = 17000
# The overlay's subnet: clear of Docker's default pools (172.17-31.x, 10.0.x for the
# ingress) and of ../shared/k8s (10.244/16 pods, 10.96/16 services, 10.245.0.1).
SWARM_SUBNET_BASE = "10.208.0.0"
# Redis memory per page frame: 5,219 bytes per 4 KiB value measured on Debian's
# Redis 7.0.15 (10,000 SETs, used_memory delta; docs/deploy.md). jemalloc rounds a
# 4,096-byte value up to its 5,120-byte class; the key and dict entry add ~100.
FRAME_FACTOR = 1.25
FRAME_EXTRA_BYTES = 128
MIN_MAXMEMORY_MIB = 32  # an idle Redis uses ~1 MiB; room for small scenarios
MIB = 1 << 20
# The link ephemeris of a deployment (docs/emulation.md): one file, mounted into
# every satnode and the gateway at LINKS_MOUNT. Kubernetes refuses a ConfigMap
# whose data exceed 1 MiB; Docker a config above 500 KiB (swarmkit's MaxConfigSize).
LINK_EPHEMERIS_FILE = "link-ephemeris.bin"
LINKS_MOUNT = "/etc/satpage/links"
CONFIGMAP_MAX_BYTES = MIB
DOCKER_CONFIG_MAX_BYTES = 500 * 1024

app = typer.Typer(help="Render deployment files (Helm values, Swarm stack) for a constellation.",
                  no_args_is_help=True)


@dataclasses.dataclass(frozen=True)
class ImageSet:
    """Image references of one deployment: ``<registry>/<name>:<tag>``."""

    registry: str = DEFAULT_REGISTRY
    tag: str = __version__

    def ref(self, name: str) -> str:
        return f"{self.registry}/{name}:{self.tag}"


@dataclasses.dataclass(frozen=True)
class RedisSizing:
    """Redis ``maxmemory`` of one satellite and the container memory limit around it."""

    maxmemory_mib: int
    limit_mib: int
    frame_bytes: int
    frames_per_satellite: int


def satellite_count(spec: str) -> int:
    """T of a Walker spec (``walker[-star]:T/P/F:ALT_KM:INC_DEG``); ValueError quotes the spec."""
    from orbit_model import parse_walker_spec

    if not spec.startswith(("walker:", "walker-star:")):
        raise ValueError(f"constellation {spec!r}: a deployment needs a Walker spec "
                         "(walker:T/P/F:ALT_KM:INC_DEG or walker-star:...); satnode computes "
                         "its ISL neighbours from it")
    return parse_walker_spec(spec)[1]


def redis_sizing(*, satellites: int, pages: int, page_bytes: int, active_sessions: float,
                 hot_share: float) -> RedisSizing:
    """Size one satellite's Redis for the frames it may hold.

    The frames of the active sessions are ``active_sessions x pages``; the most loaded
    satellite holds ``hot_share`` of them (population-weighted clients crowd a few
    satellites; the engine's pages-held-per-satellite report measures the share of a
    scenario), and never less than an even spread.
    """
    if pages < 1 or page_bytes < 1:
        raise ValueError(f"pages={pages} and page_bytes={page_bytes} must be at least 1")
    if not 0.0 < hot_share <= 1.0:
        raise ValueError(f"hot share {hot_share} must be in (0, 1]")
    if active_sessions < 0:
        raise ValueError(f"active sessions {active_sessions} must not be negative")
    frame_bytes = math.ceil(page_bytes * FRAME_FACTOR) + FRAME_EXTRA_BYTES
    share = max(hot_share, 1.0 / satellites)
    frames = math.ceil(max(active_sessions, 1.0) * pages * share)
    maxmemory = max(MIN_MAXMEMORY_MIB, math.ceil(frames * frame_bytes / MIB))
    # Redis' own overhead and the replication/client buffers: +25 % and 16 MiB.
    limit = math.ceil(maxmemory * 1.25) + 16
    return RedisSizing(maxmemory, limit, frame_bytes, frames)


def render_values(spec: str, *, sizing: RedisSizing, images: ImageSet, page_bytes: int = 4096,
                  gateway_service_type: str = "ClusterIP", source: str = "") -> str:
    """A values file for charts/satpage: only the keys that differ by scenario, commented."""
    satellites = satellite_count(spec)
    if gateway_service_type not in ("ClusterIP", "NodePort"):
        raise ValueError(f"gateway service type {gateway_service_type!r} is not ClusterIP or NodePort")
    registry_note = ("local images, never pulled" if images.registry == DEFAULT_REGISTRY
                     else "pulled if not present")
    return f"""\
# satpage Helm values rendered by `satpage deploy values` (satpage {__version__}){f' from {source}' if source else ''}.
# Install: helm install satpage charts/satpage -f THIS_FILE
constellation:
  # {satellites} satellites: the StatefulSet runs pods 0..{satellites - 1}
  spec: "{spec}"
daemons:
  # the scenario's page size: satnode and the gateway refuse bigger pages
  pageBytes: {page_bytes}
satnode:
  image:
    repository: {images.registry}/satnode  # {registry_note}
    tag: "{images.tag}"
redis:
  image:
    repository: {images.registry}/redis
    tag: "{images.tag}"
  # up to {sizing.frames_per_satellite} frames of {sizing.frame_bytes} bytes (Redis' measured cost of one page)
  maxmemory: {sizing.maxmemory_mib}mb
  resources:
    requests:
      cpu: 2m
      memory: 8Mi
    limits:
      cpu: 250m
      memory: {sizing.limit_mib}Mi
gateway:
  image:
    repository: {images.registry}/gateway
    tag: "{images.tag}"
  service:
    type: {gateway_service_type}
"""


def render_stack(spec: str, *, images: ImageSet, gateway_port: int = SWARM_GATEWAY_PORT,
                 redis_maxmemory_mib: int = 48, tls_dir: str = "tls", live_speed: float | None = None,
                 live_clock_start: str = "", live_ephemeris: str = "ephemeris.bin", replicas: int = 2,
                 live_push_lead_s: float = 10.0, links: str | None = LINK_EPHEMERIS_FILE,
                 gateways: int = 2) -> str:
    """The Docker Swarm stack: satellite i is service ``sat-i`` with Redis ``redis-i``.

    Swarm has no pods, so each satellite is two services on one overlay network,
    all ``endpoint_mode: dnsrr`` (no service VIPs: this kernel has no IPVS); a
    satellite knows its index from ``SATPAGE_INDEX`` and reaches peers as ``sat-{index}``
    (through gRPC's ``passthrough`` resolver: Docker's DNS answers service names at once
    but forwards the dns resolver's TXT queries upstream, where the guard drops them).
    ``gateways`` gateway services: ``gateway`` publishes ``gateway_port`` in host mode,
    which binds every host address, and gateway g > 0 (``gateway-g``) ``gateway_port + g``
    (one host port each: host mode binds one task per node and port, and this kernel has no
    IPVS for a routing mesh); scripts/e2e-swarm.sh guards them so only loopback reaches
    them. Each serves every session, one registered at another included (docs/faults.md,
    "Lost gateways"): a client whose gateway is lost goes on at another.

    Mutual TLS (docs/security.md): the material ``satpage deploy tls`` writes into
    tls_dir (relative to the stack file) goes in as Docker secrets, each task getting
    only its own key: satellite i its certificate and key, the gateway its own and the
    token signing key, everyone the CA and the token verification keys.

    Live mode (docs/live.md) with ``live_speed``: the gateway runs on a constellation
    clock at that speed (from ``live_clock_start``, RFC 3339; default the epoch) and reads
    the ephemeris file ``live_ephemeris`` (beside the stack file; ``satpage live
    ephemeris``) as a Docker config (at most 500 kB: 4.6 h of 150 satellites); push-ahead
    copies pages ``live_push_lead_s`` constellation seconds before the handover.

    Link emulation (docs/emulation.md): ``links`` names the link ephemeris beside the
    stack file (``satpage deploy links``: compressed, a day of 150 satellites in 0.42 MB,
    under Docker's 500 KiB limit on a config); every satnode and the gateway read it as
    a Docker config. None: no positions, links not emulated. In live mode the live
    ephemeris times the links instead (the clock's epoch is the links' time 0).
    """
    satellites = satellite_count(spec)
    if live_speed is not None and not 0 < live_speed <= 1e6:
        raise ValueError(f"live speed {live_speed} must be above 0 and at most 1e6")
    if not 0 <= live_push_lead_s <= 3600:
        raise ValueError(f"live push-ahead lead {live_push_lead_s} s is outside 0..3600")
    if not 1 <= gateways <= 8:
        raise ValueError(f"gateways {gateways} outside [1, 8]")
    if not 1 <= gateway_port <= 65535 - (gateways - 1):
        raise ValueError(f"gateway port {gateway_port} is not a TCP port (with {gateways - 1} after it)")
    from orbit_model import parse_walker_spec

    per_plane = satellites // parse_walker_spec(spec)[2]
    if not 1 <= replicas <= min(64, per_plane):
        raise ValueError(f"replicas {replicas} outside [1, {min(64, per_plane)}] (at most the "
                         f"{per_plane} satellites per plane of {spec!r})")
    # Four addresses per task (replacements get new ones before the old are freed).
    prefix = 32 - max(8, math.ceil(math.log2(4 * (2 * satellites + gateways) + 8)))
    if prefix < 12:
        raise ValueError(f"constellation {spec!r}: {satellites} satellites need more than a /12 overlay")
    subnet = f"{SWARM_SUBNET_BASE}/{prefix}"
    if links is not None and live_speed is not None:
        links = live_ephemeris
    links_env = links_mount = links_top = ""
    link_config = (f'      - {{source: link-ephemeris, target: {LINKS_MOUNT}/{LINK_EPHEMERIS_FILE}, '
                   'uid: "65532", gid: "65532", mode: 0444}\n')
    if links is not None:
        links_env = ("  # Link emulation (docs/emulation.md): positions that time every ISL hop and\n"
                     "  # ground link, from the Docker config link-ephemeris (satpage deploy links).\n"
                     f'  SATPAGE_LINK_EPHEMERIS: "{LINKS_MOUNT}/{LINK_EPHEMERIS_FILE}"\n')
        links_mount = "  configs:\n" + link_config[2:]
        how = ("the live ephemeris" if live_speed is not None else
               f"`satpage deploy links --constellation {spec} --out {links}`")
        links_top = (f"# Link emulation: the positions that time the links ({how}, beside this file).\n",
                     f"  link-ephemeris:\n    file: ./{links}\n")
    head = f"""\
# Docker Swarm stack of the satpage constellation {spec} ({satellites} satellites).
# Generated by `satpage deploy stack --constellation {spec}`: edit the generator
# (sim/satpage/commands/deploy.py), not this file. Deploy and guard: docs/deploy.md.
# Satellite i = service sat-i (satnode) + service redis-i (its page frames), all
# endpoint_mode dnsrr on the overlay network `constellation`; gateway on host port {gateway_port}{f', gateway-g on {gateway_port} + g (g < {gateways})' if gateways > 1 else ''}.
version: "3.8"

x-deploy: &deploy
  endpoint_mode: dnsrr
  replicas: 1
  restart_policy:
    condition: any
    # satnode exits when its Redis is not there yet; a pause keeps restarts from
    # piling onto a machine that is starting {2 * satellites + 1} containers.
    delay: 5s

# passthrough:///: gRPC dials the name as it is. Its default dns resolver also asks for
# a TXT record (_grpc_config.sat-N), which Docker's embedded DNS cannot answer and
# forwards upstream, where the guard drops it: 5 s lost on every new peer connection.
x-satnode-env: &satnode-env
  SATPAGE_CONSTELLATION: "{spec}"
  SATPAGE_PEER_TEMPLATE: "passthrough:///sat-{{index}}:7000"
  SATPAGE_STORE: redis
  SATPAGE_LISTEN: ":7000"
  SATPAGE_METRICS_LISTEN: ":9100"
  # Mutual TLS with the Docker secrets below (docs/security.md); health only, in
  # plain text, on 7001 for the healthcheck.
  SATPAGE_TLS_DIR: /run/secrets
  SATPAGE_HEALTH_LISTEN: "127.0.0.1:7001"
  SATPAGE_REPLICAS: "{replicas}"
  # Swarm creates the {2 * satellites + 1} services one after another: a satnode may wait
  # minutes for its Redis task. At the default 2 min, 8 satnodes exited and were
  # started again (a start with restarts); the health check's start period is 10 min.
  SATPAGE_REDIS_WAIT: "10m"
  # The deployment generation (docs/faults.md, "First start and restart"), from the
  # environment of `docker stack deploy`: a new one for a new deployment, the same for
  # its updates (SATPAGE_GENERATION=$(date +%s) docker stack deploy ...). Unset: none,
  # and a restoring satellite waits on every silent peer.
  SATPAGE_GENERATION: "${{SATPAGE_GENERATION:-}}"
{links_env}
# Health: grpc_health_probe on the standard health service, run by dockerd as an
# exec (one runc exec per check, about a core-second on a loaded machine). Every 30 s
# with a 25 s timeout, and 6 misses before a task counts as unhealthy, since Swarm
# replaces an unhealthy task: with 15 s / 12 s, 301 containers starting on 2 cores
# (load 40) timed the probes out and Swarm killed healthy satellites in a loop
# (run of 2026-11-24 01:57). A probe that succeeds ends the start period at once.
x-healthcheck: &healthcheck
  test: ["CMD", "/grpc_health_probe", "-addr=127.0.0.1:7001", "-connect-timeout=10s", "-rpc-timeout=10s"]
  interval: 30s
  timeout: 25s
  retries: 6
  start_period: 600s

x-satnode: &satnode
  image: {images.ref("satnode")}
  read_only: true
  networks: [constellation]
  healthcheck: *healthcheck
{links_mount}  deploy:
    <<: *deploy
    resources:
      limits:
        memory: 128M

# Redis' timers run once a second (--hz 1), not 10 times: nothing in it expires,
# and 150 idle Redis at the default used 0.15 of a core.
x-redis: &redis
  image: {images.ref("redis")}
  read_only: true
  command: ["--port", "6379", "--protected-mode", "no", "--save", "", "--appendonly", "no",
            "--dir", "/data", "--maxmemory", "{redis_maxmemory_mib}mb", "--maxmemory-policy", "noeviction",
            "--hz", "1"]
  networks: [constellation]
  volumes:
    - type: tmpfs
      target: /data
  deploy:
    <<: *deploy
    resources:
      limits:
        memory: {redis_maxmemory_mib + 48}M

services:
"""
    body = []
    for i in range(satellites):
        body.append(f"""\
  sat-{i}:
    <<: *satnode
    hostname: sat-{i}
    environment:
      <<: *satnode-env
      SATPAGE_INDEX: "{i}"
      SATPAGE_REDIS_ADDR: "redis-{i}:6379"
    secrets:
      - {{source: ca, target: ca.pem, uid: "65532", gid: "65532", mode: 0444}}
      - {{source: token-verify-keys, target: token-verify-keys.pem, uid: "65532", gid: "65532", mode: 0444}}
      - {{source: sat-{i}-cert, target: satellite-{i}.pem, uid: "65532", gid: "65532", mode: 0444}}
      - {{source: sat-{i}-key, target: satellite-{i}-key.pem, uid: "65532", gid: "65532", mode: 0400}}
  redis-{i}:
    <<: *redis
    hostname: redis-{i}
""")
    live_env = live_config = ""
    tops = [links_top] if links is not None else []
    if live_speed is not None:
        live_env = (f'      SATPAGE_EPHEMERIS: /etc/satpage/live/ephemeris.bin\n'
                    f'      SATPAGE_SPEED: "{live_speed:g}"\n'
                    f'      SATPAGE_PUSH_LEAD: "{live_push_lead_s:g}s"\n'
                    + (f'      SATPAGE_CLOCK_START: "{live_clock_start}"\n' if live_clock_start else ""))
        live_config = ('      - {source: live-ephemeris, target: /etc/satpage/live/ephemeris.bin, '
                       'uid: "65532", gid: "65532", mode: 0444}\n')
        tops.insert(0, ("# Live mode: the gateway's ephemeris (`satpage live ephemeris`, beside this file).\n",
                        f"  live-ephemeris:\n    file: ./{live_ephemeris}\n"))
    gateway_configs = live_config + (link_config if links is not None else "")
    live_configs = "    configs:\n" + gateway_configs if gateway_configs else ""
    configs_top = ("\n" + "".join(c for c, _ in tops) + "configs:\n" + "".join(e for _, e in tops)
                   if tops else "")

    def gateway_service(g: int) -> str:
        name = "gateway" if g == 0 else f"gateway-{g}"
        return f"""\
  {name}:
    image: {images.ref("gateway")}
    read_only: true
    hostname: {name}
    environment:
      <<: *satnode-env
{live_env}{live_configs}    secrets:
      - {{source: ca, target: ca.pem, uid: "65532", gid: "65532", mode: 0444}}
      - {{source: token-verify-keys, target: token-verify-keys.pem, uid: "65532", gid: "65532", mode: 0444}}
      - {{source: gateway-cert, target: gateway.pem, uid: "65532", gid: "65532", mode: 0444}}
      - {{source: gateway-key, target: gateway-key.pem, uid: "65532", gid: "65532", mode: 0400}}
      - {{source: token-signing-key, target: token-signing-key.pem, uid: "65532", gid: "65532", mode: 0400}}
    networks: [constellation]
    ports:
      - target: 7000
        published: {gateway_port + g}
        protocol: tcp
        mode: host
    healthcheck: *healthcheck
    deploy:
      <<: *deploy
      resources:
        limits:
          memory: 256M

"""

    tail = "".join(gateway_service(g) for g in range(gateways)) + f"""\
networks:
  constellation:
    driver: overlay
    attachable: true
    # Room for every task and its replacements ({2 * satellites + gateways} tasks): the
    # default /24 runs out of addresses for 150 satellites.
    ipam:
      config:
        - subnet: {subnet}

# The TLS material (`satpage deploy tls --constellation {spec} --out {tls_dir}`, beside this file).
secrets:
  ca:
    file: ./{tls_dir}/ca.pem
  token-verify-keys:
    file: ./{tls_dir}/token-verify-keys.pem
  token-signing-key:
    file: ./{tls_dir}/token-signing-key.pem
  gateway-cert:
    file: ./{tls_dir}/gateway.pem
  gateway-key:
    file: ./{tls_dir}/gateway-key.pem
"""
    secrets = "".join(f"""  sat-{i}-cert:
    file: ./{tls_dir}/satellite-{i}.pem
  sat-{i}-key:
    file: ./{tls_dir}/satellite-{i}-key.pem
""" for i in range(satellites))
    return head + "".join(body) + tail + secrets + configs_top


def _write(text: str, out: Path | None) -> None:
    if out is None:
        typer.echo(text, nl=False)
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)


@app.command("values")
def values(
    scenario: Annotated[Path | None, typer.Option(
        "--scenario", "-s", exists=True, dir_okay=False,
        help="Scenario TOML: constellation, pages, page size, sessions.")] = None,
    constellation: Annotated[str | None, typer.Option(
        "--constellation", "-c",
        help=f"Walker spec (overrides the scenario; default {DEFAULT_SPEC}).")] = None,
    pages: Annotated[int | None, typer.Option(
        help="Pages per session (default: scenario, else 1000).")] = None,
    page_bytes: Annotated[int | None, typer.Option(
        help="Bytes per page (default: scenario, else 4096).")] = None,
    active_sessions: Annotated[float | None, typer.Option(
        help="Sessions active at once (default: scenario count x mean lifetime / duration, else 1).")] = None,
    hot_share: Annotated[float, typer.Option(
        help="Largest share of the active frames one satellite holds.")] = 0.25,
    registry: Annotated[str, typer.Option(
        help="Image registry prefix (satpage.local = local images).")] = DEFAULT_REGISTRY,
    tag: Annotated[str, typer.Option(help="Image tag.")] = __version__,
    gateway_service: Annotated[str, typer.Option(
        help="Gateway Service type: ClusterIP or NodePort.")] = "ClusterIP",
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write here instead of stdout.")] = None,
) -> None:
    """Render a Helm values file for charts/satpage from a scenario or a constellation spec."""
    try:
        text = _values_text(scenario, constellation, pages, page_bytes, active_sessions,
                            hot_share, ImageSet(registry, tag), gateway_service)
    except ValueError as exc:
        fail(str(exc))
    _write(text, out)


def _values_text(scenario: Path | None, constellation: str | None, pages: int | None,
                 page_bytes: int | None, active_sessions: float | None, hot_share: float,
                 images: ImageSet, gateway_service: str) -> str:
    spec, source = DEFAULT_SPEC, ""
    d_pages, d_bytes, d_active = 1000, 4096, 1.0
    if scenario is not None:
        from satpage.scenario import load_scenario

        sc = load_scenario(scenario)
        spec, source = sc.constellation.spec, str(scenario)
        d_pages, d_bytes = sc.workload.pages, sc.workload.page_bytes
        span_s = sc.time.duration_s
        d_active = sc.sessions.count * min(1.0, sc.sessions.lifetime_mean_s / span_s) if span_s > 0 else 1.0
    spec = constellation or spec
    satellites = satellite_count(spec)
    page_bytes = d_bytes if page_bytes is None else page_bytes
    sizing = redis_sizing(satellites=satellites, pages=d_pages if pages is None else pages,
                          page_bytes=page_bytes,
                          active_sessions=d_active if active_sessions is None else active_sessions,
                          hot_share=hot_share)
    return render_values(spec, sizing=sizing, images=images, page_bytes=page_bytes,
                         gateway_service_type=gateway_service, source=source)


@app.command("tls")
def tls(
    constellation: Annotated[str, typer.Option("--constellation", "-c", help="Walker spec.")] = DEFAULT_SPEC,
    out: Annotated[Path, typer.Option("--out", "-o", help="Directory to write (created, mode 0700).")]
    = Path("tls"),
) -> None:
    """Write a fresh constellation CA, a certificate per satellite (DNS SAN satellite-<i>.satpage
    and the Swarm task name sat-<i>), the gateway's, a client's and the token keys (docs/security.md)."""
    from satpage.cluster.certs import write_tls_dir

    try:
        n = satellite_count(constellation)
        write_tls_dir(out, n, satellite_names=lambda i: [f"sat-{i}"], gateway_names=["gateway"])
    except ValueError as exc:
        fail(str(exc))
    typer.echo(f"TLS material for {n} satellites in {out}", err=True)


@app.command("stack")
def stack(
    constellation: Annotated[str, typer.Option("--constellation", "-c", help="Walker spec.")] = DEFAULT_SPEC,
    registry: Annotated[str, typer.Option(help="Image registry prefix.")] = DEFAULT_REGISTRY,
    tag: Annotated[str, typer.Option(help="Image tag.")] = __version__,
    gateway_port: Annotated[int, typer.Option(
        help="Host port of the gateway (host mode).")] = SWARM_GATEWAY_PORT,
    live_speed: Annotated[float | None, typer.Option(
        "--live-speed", help="Live mode: the gateway's clock speed; it reads ./ephemeris.bin beside the "
        "stack file (satpage live ephemeris; docs/live.md).")] = None,
    live_clock_start: Annotated[str, typer.Option(
        "--live-clock-start", help="Live mode: wall instant (RFC 3339) the clock runs at --live-speed from.")]
    = "",
    live_lead_s: Annotated[float, typer.Option(
        "--live-lead-s", help="Live mode: push-ahead copies pages to the next serving satellite this many "
        "constellation seconds before the handover (SATPAGE_PUSH_LEAD; 0: at the handover).")] = 10.0,
    replicas: Annotated[int, typer.Option(
        "--replicas", help="Replication factor R of the satnodes (SATPAGE_REPLICAS, docs/faults.md); "
        "1: no replicas (a lost satellite loses its pages).")] = 2,
    gateways: Annotated[int, typer.Option(
        "--gateways", help="Gateway services (1-8): gateway-g publishes --gateway-port + g; each serves "
        "every session, so a client whose gateway is lost goes on at another (docs/faults.md).")] = 2,
    emulate_links: Annotated[bool, typer.Option(
        "--emulate-links/--no-emulate-links", help="Link emulation (docs/emulation.md): satnodes and "
        f"the gateway read ./{LINK_EPHEMERIS_FILE} beside the stack file (satpage deploy links; in "
        "live mode the live ephemeris) as a Docker config.")] = True,
    out: Annotated[Path | None, typer.Option(
        "--out", "-o", help="Write here instead of stdout.")] = None,
) -> None:
    """Render the Docker Swarm stack file (one satnode and one Redis service per satellite)."""
    try:
        text = render_stack(constellation, images=ImageSet(registry, tag), gateway_port=gateway_port,
                            live_speed=live_speed, live_clock_start=live_clock_start,
                            replicas=replicas, live_push_lead_s=live_lead_s,
                            links=LINK_EPHEMERIS_FILE if emulate_links else None, gateways=gateways)
    except ValueError as exc:
        fail(str(exc))
    _write(text, out)


def write_links(out: Path, spec: str, *, epoch: str | None = None, hours: float = 24.0) -> int:
    """Write the compressed link ephemeris of a deployment of ``spec``: ``hours`` of
    positions from ``epoch`` (default: the default scenario's; a replay's scenario times are
    from its epoch, so the two must agree), 60 s knots (docs/emulation.md). Returns its size."""
    from satpage.cluster.local import write_positions

    satellite_count(spec)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_positions(out, spec, epoch, hours, compress=True)
    return out.stat().st_size


@app.command("links")
def links(
    constellation: Annotated[str | None, typer.Option(
        "--constellation", "-c", help=f"Walker spec (default: the scenario's, else {DEFAULT_SPEC}).")] = None,
    scenario: Annotated[Path | None, typer.Option(
        "--scenario", "-s", exists=True, dir_okay=False,
        help="Scenario TOML: its constellation, epoch and duration (plus 6 min).")] = None,
    epoch: Annotated[str | None, typer.Option(
        "--epoch", help="Time 0 of the positions, ISO 8601 (default: the scenario's, else the "
        "default scenario's): the epoch of the scenarios replayed on the deployment.")] = None,
    hours: Annotated[float | None, typer.Option(
        "--hours", help="Hours of positions from the epoch (default: the scenario's duration, else "
        "24); later times cross without waiting.")] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write.")] = Path(LINK_EPHEMERIS_FILE),
) -> None:
    """Write the compressed link ephemeris that times a deployment's links (docs/emulation.md):
    the ConfigMap of charts/satpage's ``links.configMap``, or the Swarm stack's Docker config."""
    spec, d_epoch, d_hours = DEFAULT_SPEC, None, 24.0
    if scenario is not None:
        from satpage.scenario import load_scenario

        sc = load_scenario(scenario)
        spec, d_epoch, d_hours = sc.constellation.spec, sc.time.epoch, sc.time.duration_s / 3600 + 0.1
    spec = constellation or spec
    try:
        size = write_links(out, spec, epoch=epoch or d_epoch, hours=d_hours if hours is None else hours)
    except ValueError as exc:
        fail(str(exc))
    fits = [name for name, most in (("a ConfigMap (1 MiB)", CONFIGMAP_MAX_BYTES),
                                    ("a Docker config (500 KiB)", DOCKER_CONFIG_MAX_BYTES)) if size <= most]
    typer.echo(f"link ephemeris of {spec}: {size:,} bytes in {out}; fits "
               + (" and ".join(fits) if fits else "neither a ConfigMap (1 MiB) nor a Docker config "
                  "(500 KiB): shorten --hours"), err=True)
