"""Deployment files: the Dockerfile and its Docker-free builder, the Swarm stack,
`satpage deploy values`. The chart itself: test_chart.py."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from satpage import __version__
from satpage.cli import app
from satpage.commands import deploy

ROOT = Path(__file__).resolve().parents[2]
HELM = ROOT / ".tools" / "bin" / "helm"


def _load_image_pack():
    spec = importlib.util.spec_from_file_location("image_pack", ROOT / "scripts" / "image-pack.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("image_pack", mod)  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


image_pack = _load_image_pack()


# --- Dockerfile and image-pack ---------------------------------------------------

@pytest.mark.parametrize("target", ["satnode", "gateway", "redis"])
def test_every_image_is_from_scratch_non_root_and_labelled(target):
    text = (ROOT / "Dockerfile").read_text()
    stage = image_pack.parse_dockerfile(text, target, {"VERSION": "9.9.9"})
    uid, _, gid = stage.user.partition(":")
    assert int(uid) > 0 and int(gid) > 0
    for key in ("source", "version", "licenses", "revision", "title"):
        assert stage.labels.get(f"org.opencontainers.image.{key}"), key
    assert stage.labels["org.opencontainers.image.version"] == "9.9.9"
    assert stage.entrypoint and stage.entrypoint[0].startswith("/")


def test_the_dockerfile_default_version_is_the_package_version():
    stage = image_pack.parse_dockerfile((ROOT / "Dockerfile").read_text(), "satnode", {})
    assert stage.labels["org.opencontainers.image.version"] == __version__


def _context(tmp_path: Path) -> Path:
    ctx = tmp_path / "ctx"
    (ctx / "redis" / "lib").mkdir(parents=True)
    (ctx / "redis" / "data").mkdir()
    for name, body in (("satnode", b"\x7fELF satnode"), ("gateway", b"\x7fELF gateway"),
                       ("grpc_health_probe", b"\x7fELF probe"), ("redis/redis-server", b"\x7fELF redis"),
                       ("redis/redis-cli", b"\x7fELF cli"), ("redis/lib/libc.so.6", b"libc")):
        (ctx / name).write_bytes(body)
        (ctx / name).chmod(0o755 if "lib" not in name else 0o644)
    return ctx


def _read_archive(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_image_pack_writes_a_consistent_oci_and_docker_archive(tmp_path):
    ctx = _context(tmp_path)
    out = tmp_path / "redis.tar"
    rc = image_pack.main(["--context", str(ctx), "--target", "redis", "--tag", "satpage.local/redis:1",
                          "--out", str(out), "--build-arg", "VERSION=1"])
    assert rc == 0
    files = _read_archive(out)
    for name, data in files.items():  # every blob is named by its own digest
        if name.startswith("blobs/sha256/"):
            assert hashlib.sha256(data).hexdigest() == name.rsplit("/", 1)[1]
    index = json.loads(files["index.json"])
    (entry,) = index["manifests"]
    assert entry["annotations"]["io.containerd.image.name"] == "satpage.local/redis:1"
    manifest = json.loads(files[f"blobs/sha256/{entry['digest'].split(':')[1]}"])
    config = json.loads(files[f"blobs/sha256/{manifest['config']['digest'].split(':')[1]}"])
    (layer_desc,) = manifest["layers"]
    layer = files[f"blobs/sha256/{layer_desc['digest'].split(':')[1]}"]
    assert config["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(layer).hexdigest()}"]
    assert config["config"]["User"] == "65532:65532"
    assert config["config"]["Entrypoint"] == ["/redis-server"]
    assert config["config"]["Cmd"][:2] == ["--port", "6379"]
    assert config["config"]["WorkingDir"] == "/data"
    assert config["config"]["Labels"]["org.opencontainers.image.licenses"] == "BSD-3-Clause"
    docker = json.loads(files["manifest.json"])
    assert docker[0]["RepoTags"] == ["satpage.local/redis:1"]
    import io

    with tarfile.open(fileobj=io.BytesIO(layer)) as lt:
        members = {m.name: m for m in lt.getmembers()}
    assert members["redis-server"].mode == 0o755 and members["redis-server"].uid == 0
    assert members["lib/libc.so.6"].mode == 0o644
    assert members["data"].isdir()
    assert "satnode" not in members  # only the redis target's COPY


def test_image_pack_is_reproducible(tmp_path):
    ctx = _context(tmp_path)
    digests = []
    for n in range(2):
        out = tmp_path / f"satnode{n}.tar"
        image_pack.main(["--context", str(ctx), "--target", "satnode", "--tag", "x/satnode:1",
                         "--out", str(out)])
        digests.append(hashlib.sha256(out.read_bytes()).hexdigest())
        os.utime(ctx / "satnode", (n * 1000, n * 1000))
    assert digests[0] == digests[1]


@pytest.mark.parametrize(
    ("dockerfile", "message"),
    [
        ("FROM debian:12 AS x\n", "only 'FROM scratch AS name'"),
        ("FROM scratch AS x\nRUN echo hi\n", "line 2: instruction RUN"),
        ("FROM scratch AS x\nENTRYPOINT /x --y\n", "JSON form"),
        ("FROM scratch AS y\n", "target 'x' is not a stage"),
        ("FROM scratch AS x\nLABEL a=$NOPE\n", "$NOPE is not a declared ARG"),
    ],
)
def test_image_pack_refuses_what_it_cannot_build_naming_the_line(dockerfile, message):
    with pytest.raises(ValueError, match=message.replace("$", r"\$").replace("(", r"\(")):
        image_pack.parse_dockerfile(dockerfile, "x", {})


# --- Swarm stack ---------------------------------------------------------------

def test_the_checked_in_swarm_stack_is_what_the_generator_writes():
    checked_in = (ROOT / "charts" / "swarm" / "satpage-stack.yml").read_text()
    assert checked_in == deploy.render_stack(deploy.DEFAULT_SPEC, images=deploy.ImageSet())


@pytest.mark.parametrize("spec", ["walker-star:150/10/1:500:87", "walker:24/4/1:550:53"])
def test_the_swarm_stack_has_a_satnode_and_a_redis_per_satellite_all_dnsrr(spec):
    from orbit_model import parse_walker_spec

    total = parse_walker_spec(spec)[1]
    stack = yaml.safe_load(deploy.render_stack(spec, images=deploy.ImageSet(tag="7")))
    services = stack["services"]
    assert len(services) == 2 * total + 2  # two gateways
    for i in range(total):
        sat = services[f"sat-{i}"]
        env = sat["environment"]
        assert env["SATPAGE_INDEX"] == str(i)
        assert env["SATPAGE_REDIS_ADDR"] == f"redis-{i}:6379"
        assert env["SATPAGE_CONSTELLATION"] == spec
        assert env["SATPAGE_PEER_TEMPLATE"].replace("{index}", "3") == "passthrough:///sat-3:7000"
        assert sat["image"] == "satpage.local/satnode:7"
        assert services[f"redis-{i}"]["image"] == "satpage.local/redis:7"
    for name, svc in services.items():
        assert svc["deploy"]["endpoint_mode"] == "dnsrr", name
        assert svc["read_only"] is True, name
        assert svc["networks"] == ["constellation"], name
    (port,) = services["gateway"]["ports"]
    assert port["mode"] == "host" and port["published"] == deploy.SWARM_GATEWAY_PORT
    # the second gateway: its own host port (host mode binds one task per port and node)
    (port,) = services["gateway-1"]["ports"]
    assert port["mode"] == "host" and port["published"] == deploy.SWARM_GATEWAY_PORT + 1
    assert services["gateway-1"]["secrets"] == services["gateway"]["secrets"]
    assert "healthcheck" in services["sat-0"]
    net = stack["networks"]["constellation"]
    assert net["driver"] == "overlay" and net["attachable"] is True
    # Every task and a replacement for each fit in the overlay's subnet.
    import ipaddress

    (pool,) = net["ipam"]["config"]
    assert ipaddress.ip_network(pool["subnet"]).num_addresses >= 2 * len(services)


def test_the_swarm_stack_replicates_twice_by_default_and_refuses_more_copies_than_a_plane_holds(tmp_path):
    stack = yaml.safe_load(deploy.render_stack(deploy.DEFAULT_SPEC, images=deploy.ImageSet()))
    assert stack["services"]["sat-7"]["environment"]["SATPAGE_REPLICAS"] == "2"
    # a satnode waits for its Redis task as long as the health check's start period
    assert stack["services"]["sat-7"]["environment"]["SATPAGE_REDIS_WAIT"] == "10m"
    one = yaml.safe_load(deploy.render_stack(deploy.DEFAULT_SPEC, images=deploy.ImageSet(), replicas=1))
    assert one["services"]["sat-7"]["environment"]["SATPAGE_REPLICAS"] == "1"
    # walker:6/6/0 has one satellite per plane: no satellite behind it to hold a copy.
    result = CliRunner().invoke(app, ["deploy", "stack", "-c", "walker:6/6/0:550:53", "--out", str(tmp_path / "s.yml")])
    assert result.exit_code == 2
    assert "replicas 2 outside [1, 1]" in result.output
    assert CliRunner().invoke(app, ["deploy", "stack", "-c", "walker:6/6/0:550:53", "--replicas", "1",
                                    "--out", str(tmp_path / "s.yml")]).exit_code == 0


@pytest.mark.integration
@pytest.mark.skipif(not HELM.exists(), reason="helm is not in .tools/bin (scripts/setup.sh --with-helm)")
@pytest.mark.integration  # helm template
def test_redis_runs_its_timers_once_a_second_in_both_deployments():
    """Idle cost: at Redis' default hz 10, 150 idle Redis used 0.15 of a core."""
    stack = yaml.safe_load(deploy.render_stack(deploy.DEFAULT_SPEC, images=deploy.ImageSet()))
    cmd = stack["services"]["redis-0"]["command"]
    assert cmd[cmd.index("--hz") + 1] == "1"
    out = subprocess.run([str(HELM), "template", "t", str(ROOT / "charts" / "satpage"), "--kube-version", "1.34.0"],
                         capture_output=True, text=True, timeout=60, check=True).stdout
    (sts,) = [d for d in yaml.safe_load_all(out) if d and d["kind"] == "StatefulSet"]
    pod = sts["spec"]["template"]["spec"]
    (redis,) = [c for c in pod.get("initContainers", []) + pod["containers"] if c["name"] == "redis"]
    assert redis["args"][redis["args"].index("--hz") + 1] == "1"


def test_a_tle_constellation_cannot_be_deployed_and_the_message_says_why():
    with pytest.raises(ValueError, match="needs a Walker spec"):
        deploy.satellite_count("tle:catalog.txt")


# --- satpage deploy values -------------------------------------------------------

def test_redis_sizing_follows_the_measured_cost_of_a_frame():
    # 143 active sessions x 1000 pages, a quarter on the busiest satellite.
    s = deploy.redis_sizing(satellites=150, pages=1000, page_bytes=4096, active_sessions=143.0,
                            hot_share=0.25)
    assert s.frame_bytes >= 5219  # measured: 5,219 bytes of Redis memory per 4 KiB frame
    assert s.frames_per_satellite == 35750
    assert s.maxmemory_mib * (1 << 20) >= s.frames_per_satellite * s.frame_bytes
    assert s.limit_mib > s.maxmemory_mib
    small = deploy.redis_sizing(satellites=150, pages=10, page_bytes=64, active_sessions=1,
                                hot_share=0.25)
    assert small.maxmemory_mib == deploy.MIN_MAXMEMORY_MIB


@pytest.mark.integration
@pytest.mark.skipif(not HELM.exists(), reason="helm is not in .tools/bin (scripts/setup.sh --with-helm)")
@pytest.mark.parametrize("args", [["--constellation", "walker:24/4/1:550:53", "--gateway-service", "NodePort",
                                   "--page-bytes", "65536"],
                                  ["--scenario", str(ROOT / "sim" / "satpage" / "scenarios" / "default.toml")],
                                  ["--registry", "registry.example.com/satpage", "--tag", "1.2.3"]])
def test_rendered_values_install_with_plain_helm(tmp_path, args):
    out = tmp_path / "values.yaml"
    result = CliRunner().invoke(app, ["deploy", "values", *args, "--out", str(out)])
    assert result.exit_code == 0, result.output
    lint = subprocess.run([str(HELM), "template", "t", str(ROOT / "charts" / "satpage"), "-f", str(out),
                           "--kube-version", "1.34.0"], capture_output=True, text=True, timeout=60)
    assert lint.returncode == 0, lint.stderr
    values = yaml.safe_load(out.read_text())
    docs = [d for d in yaml.safe_load_all(lint.stdout) if d]
    (sts,) = [d for d in docs if d["kind"] == "StatefulSet"]
    from orbit_model import parse_walker_spec

    assert sts["spec"]["replicas"] == parse_walker_spec(values["constellation"]["spec"])[1]
    # the daemons' settings; the signer's CA bundle is a ConfigMap of its own
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap" and "SATPAGE_PAGE_BYTES" in d.get("data", {})]
    assert cm["data"]["SATPAGE_PAGE_BYTES"] == str(values["daemons"]["pageBytes"])
    assert cm["data"]["SATPAGE_REPLICAS"] == str(values["satnode"].get("replicas", 2))  # chart default 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--constellation", "walker:150/7/1:500:87"], "'walker:150/7/1:500:87'"),
        (["--constellation", "tle:x.txt"], "needs a Walker spec"),
        (["--hot-share", "2"], "hot share 2.0"),
        (["--gateway-service", "LoadBalancer"], "'LoadBalancer'"),
    ],
)
def test_deploy_values_rejects_bad_input_naming_the_value(args, message):
    result = CliRunner().invoke(app, ["deploy", "values", *args])
    assert result.exit_code == 2
    assert message in result.output


def test_deploy_stack_writes_the_stack_for_another_constellation(tmp_path):
    out = tmp_path / "stack.yml"
    result = CliRunner().invoke(app, ["deploy", "stack", "-c", "walker:6/2/1:550:53", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(yaml.safe_load(out.read_text())["services"]) == 14  # 6 satnodes, 6 redis, 2 gateways
    result = CliRunner().invoke(app, ["deploy", "stack", "-c", "walker:6/2/1:550:53", "--gateways", "1",
                                      "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "gateway-1" not in yaml.safe_load(out.read_text())["services"]
    bad = CliRunner().invoke(app, ["deploy", "stack", "--gateways", "9", "--out", str(out)])
    assert bad.exit_code == 2 and "gateways 9 outside [1, 8]" in bad.output


# --- the end-to-end verdict ------------------------------------------------------

@pytest.mark.integration
def test_the_e2e_verdict_passes_equal_counts_and_fails_any_difference(tmp_path):
    script = ROOT / "scripts" / "e2e-compare.py"
    engine = {"totals": [321.0, 477.0], "last_row": [33.0, 346.0], "proactive_moves": 2797.0,
              "ondemand_moves": 1216.0, "ondemand_hops": 1751.0}
    (tmp_path / "e.json").write_text(json.dumps(engine))
    (tmp_path / "same.json").write_text(json.dumps({**engine, "backend": "cluster"}))
    (tmp_path / "diff.json").write_text(json.dumps({**engine, "ondemand_hops": 1750.0}))

    def run(*args):
        return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True)

    assert run("paper", str(tmp_path / "e.json"), str(tmp_path / "same.json")).returncode == 0
    bad = run("paper", str(tmp_path / "e.json"), str(tmp_path / "diff.json"))
    assert bad.returncode == 1 and "ondemand_hops" in bad.stderr
    e = {"strategies": {"on-demand": {"accesses": 10, "page_hops": 7, "ratio": 0.5}}}
    c = {"strategies": {"on-demand": {"accesses": 10, "page_hops": 8}}}
    (tmp_path / "ce.json").write_text(json.dumps(e))
    (tmp_path / "cc.json").write_text(json.dumps(c))
    bad = run("compare", str(tmp_path / "ce.json"), str(tmp_path / "cc.json"))
    assert bad.returncode == 1 and "on-demand.page_hops" in bad.stderr
    (tmp_path / "none.json").write_text(json.dumps({"strategies": {"on-demand": {"note": "x"}}}))
    assert run("compare", str(tmp_path / "ce.json"), str(tmp_path / "none.json")).returncode == 1
    # Latencies are reported, not held to the engine's: a deployment without link
    # emulation answers in the machine's time (make e2e-swarm failed on fault_latency_ms).
    lat_e = {"strategies": {"on-demand": {"accesses": 10, "fault_latency_ms": 41.3}}}
    lat_c = {"strategies": {"on-demand": {"accesses": 10, "fault_latency_ms": 1.2}}}
    (tmp_path / "le.json").write_text(json.dumps(lat_e))
    (tmp_path / "lc.json").write_text(json.dumps(lat_c))
    ok = run("compare", str(tmp_path / "le.json"), str(tmp_path / "lc.json"))
    assert ok.returncode == 0 and "latency: reported, not compared" in ok.stdout


@pytest.mark.integration
def test_the_e2e_loss_check_counts_frames_missing_after_a_kill(tmp_path):
    """`lost` compares the frames EndSession deleted in a replay without and with a kill."""
    script = ROOT / "scripts" / "e2e-compare.py"
    base = {"strategies": {"on-demand": {"pages_deleted": 5974}, "proactive": {"pages_deleted": 1400}}}
    short = {"strategies": {"on-demand": {"pages_deleted": 5900}, "proactive": {"pages_deleted": 1397}}}
    for name, obj in (("b", base), ("s", short)):
        (tmp_path / f"{name}.json").write_text(json.dumps(obj))

    def run(a, b):
        return subprocess.run([sys.executable, str(script), "lost", str(tmp_path / a), str(tmp_path / b)],
                              capture_output=True, text=True)

    same = run("b.json", "b.json")
    assert same.returncode == 0 and "pages_lost=0" in same.stdout
    lost = run("b.json", "s.json")
    assert lost.returncode == 1 and "pages_lost=77" in lost.stdout


@pytest.mark.integration
def test_idle_cpu_of_a_local_cluster_is_its_live_satnodes_cpu_time(tmp_path):
    """scripts/idle-cpu.py --state-dir: a spinning and a sleeping process recorded as a
    cluster's satnodes (and one that has exited): the spinning one's CPU time is
    counted, the sleeper alone uses none, the exited one is left out."""
    script = ROOT / "scripts" / "idle-cpu.py"
    spin = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    sleep = subprocess.Popen(["sleep", "120"])
    gone = subprocess.Popen(["true"])
    gone.wait()

    def run(*pids):
        (tmp_path / "cluster.json").write_text(json.dumps({
            "constellation": "walker-star:4/2/0:500:87", "replicas": 2,
            "processes": [{"role": "satnode", "pid": p} for p in pids] + [{"role": "redis", "pid": spin.pid}]}))
        out = subprocess.run([sys.executable, str(script), "--state-dir", str(tmp_path), "--seconds", "2"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    try:
        both = run(spin.pid, sleep.pid, gone.pid)
        assert (both["satnodes"], both["satnodes_alive"], both["replicas"]) == (3, 2, 2)
        assert 0 < both["idle_cores"] <= 1.05
        assert run(sleep.pid)["idle_cores"] == 0.0  # the spinner as a redis is not a satnode
    finally:
        spin.kill()
        sleep.kill()
        spin.wait()
        sleep.wait()
    bad = subprocess.run([sys.executable, str(script), "--state-dir", str(tmp_path / "none")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "none" in bad.stderr


def test_k8s_startup_phases_come_from_the_pods_the_satnode_logs_and_the_kubelet_log(tmp_path, capsys):
    """scripts/k8s-startup.py: two pods' phases as seconds after T0, the start-up probe's first
    success from a klog kubelet log (its year from T0), and exit 1 while a pod is not Ready."""
    spec = importlib.util.spec_from_file_location("k8s_startup", ROOT / "scripts" / "k8s-startup.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    t0 = 1795810000.0

    def at(s: float, fmt: str = "%Y-%m-%dT%H:%M:%SZ") -> str:
        return datetime.fromtimestamp(t0 + s, UTC).strftime(fmt)

    def klog(s: float, status: str, name: str) -> str:  # klog's header has no year
        return (f"I{at(s, '%m%d %H:%M:%S.%f')}    2644 kubelet.go:2634] \"SyncLoop (probe)\" "
                f"probe=\"startup\" status=\"{status}\" pod=\"ns/{name}\"\n")

    def pod(i: int, ready: bool) -> dict:
        return {"metadata": {"name": f"satpage-{i}", "creationTimestamp": at(1)},
                "status": {"conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": at(2)}]
                           + ([{"type": "Ready", "status": "True", "lastTransitionTime": at(40 + i)}] if ready else []),
                           "initContainerStatuses": [{"name": "fetch-tls", "state": {"terminated": {
                               "startedAt": at(5), "finishedAt": at(10 + i)}}}],
                           "containerStatuses": [{"name": "redis", "state": {"running": {"startedAt": at(20)}}},
                                                 {"name": "satnode", "state": {"running": {"startedAt": at(21 + i)}}}]}}

    logs = tmp_path / "logs"
    logs.mkdir()
    for i in (0, 1):
        (logs / f"satpage-{i}.log").write_text(json.dumps({"time": at(21 + i), "msg": "certificate issued"}) + "\n"
                                               + json.dumps({"time": at(22 + i), "msg": "ready"}) + "\nnot json\n")
    (logs / "gateway.log").write_text(json.dumps({"time": at(8), "msg": "certificate signer listening"}) + "\n")
    kubelet = tmp_path / "kubelet.log"
    kubelet.write_text(klog(34.5, "unhealthy", "satpage-0") + klog(35.25, "started", "satpage-0")
                       + klog(39, "started", "satpage-1") + klog(50, "started", "satpage-1"))

    def run(*pods, kubelet_log=kubelet):
        (tmp_path / "pods.json").write_text(json.dumps({"items": list(pods)}))
        rc = script.main([str(tmp_path / "pods.json"), str(t0), str(logs), str(kubelet_log)])
        return rc, capsys.readouterr()

    rc, out = run(pod(0, True), pod(1, True))
    assert rc == 0, out.err
    assert "startup probe ok" in out.out and out.out.splitlines()[-1] == "last_ready_s=41.0"
    assert "  signer listening     8.0  (the gateway)" in out.out
    found = script.phases([pod(0, True), pod(1, True)], t0, logs, script._kubelet_startup_ok(kubelet, 2026))
    assert found["fetch-tls done"] == [10.0, 11.0]
    assert found["log ready"] == [22.0, 23.0]
    assert found["log certificate issued"] == [21.0, 22.0]
    assert found["startup probe ok"] == [35.25, 39.0]  # each pod's first success
    assert found["Ready"] == [40.0, 41.0]
    assert run(pod(0, True), pod(1, False))[0] == 1
    rc, out = run(pod(0, True), kubelet_log=tmp_path / "none.log")
    assert rc == 2 and "none.log" in out.err


@pytest.mark.integration
def test_apt_ensure_changes_nothing_when_installed_and_rejects_bad_names():
    script = ROOT / "scripts" / "apt-ensure.sh"
    ok = subprocess.run(["bash", str(script), "bash", "coreutils"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr == ""
    bad = subprocess.run(["bash", str(script), "foo;rm"], capture_output=True, text=True)
    assert bad.returncode == 2 and "foo;rm" in bad.stderr


def _swarm_files(stack: dict) -> dict[str, dict[str, str]]:
    """Every service's files under /run/secrets: {service: {target: file on the host}}."""
    return {name: {sec["target"]: stack["secrets"][sec["source"]]["file"] for sec in svc.get("secrets", [])}
            for name, svc in stack["services"].items()}


def test_the_swarm_stack_gives_each_task_only_its_own_key_as_docker_secrets(tmp_path):
    """Every secret file the stack names is one `satpage deploy tls` writes; satellite i
    gets its own key and no other, the gateway the token signing key, Redis nothing;
    the verification key satellites get is public."""
    spec = "walker-star:4/2/0:500:87"
    stack = yaml.safe_load(deploy.render_stack(spec, images=deploy.ImageSet()))
    out = CliRunner().invoke(app, ["deploy", "tls", "-c", spec, "--out", str(tmp_path / "tls")])
    assert out.exit_code == 0, out.output
    for name, s in stack["secrets"].items():
        assert (tmp_path / s["file"]).is_file(), name
    verify = (tmp_path / "tls" / "token-verify-keys.pem").read_bytes()
    assert verify.startswith(b"-----BEGIN PUBLIC KEY-----") and b"PRIVATE" not in verify
    services = stack["services"]
    for i in range(4):
        env = services[f"sat-{i}"]["environment"]
        assert env["SATPAGE_TLS_DIR"] == "/run/secrets" and "SATPAGE_INSECURE" not in env
        targets = {s["target"]: s for s in services[f"sat-{i}"]["secrets"]}
        assert targets[f"satellite-{i}-key.pem"]["mode"] == 0o400
    assert "127.0.0.1:7001" in " ".join(services["sat-0"]["healthcheck"]["test"])


def test_every_swarm_service_holds_only_its_own_key_files():
    """The checked-in stack (150 satellites): for every service, exactly the files it
    gets and the file each comes from."""
    stack = yaml.safe_load((ROOT / "charts" / "swarm" / "satpage-stack.yml").read_text())
    public = {"ca.pem": "./tls/ca.pem", "token-verify-keys.pem": "./tls/token-verify-keys.pem"}
    want = {f"sat-{i}": {**public, f"satellite-{i}.pem": f"./tls/satellite-{i}.pem",
                         f"satellite-{i}-key.pem": f"./tls/satellite-{i}-key.pem"} for i in range(150)}
    want |= {f"redis-{i}": {} for i in range(150)}
    want["gateway"] = {**public, "gateway.pem": "./tls/gateway.pem", "gateway-key.pem": "./tls/gateway-key.pem",
                       "token-signing-key.pem": "./tls/token-signing-key.pem"}
    want["gateway-1"] = want["gateway"]  # the replica: the same identity and signing key
    assert _swarm_files(stack) == want


def test_every_satnode_and_the_gateway_read_the_link_ephemeris_that_deploy_links_writes(tmp_path):
    """On by default: the stack mounts ./link-ephemeris.bin into every satnode and the
    gateway; `satpage deploy links` writes it compressed, under Docker's 500 KiB limit for
    a day of the default constellation, and the daemons' reader takes it (orbit_model's)."""
    from orbit_model.io import read_ephemeris

    stack = yaml.safe_load((ROOT / "charts" / "swarm" / "satpage-stack.yml").read_text())
    services = stack["services"]
    for name in [f"sat-{i}" for i in range(150)] + ["gateway"]:
        (cfg,) = services[name]["configs"]
        assert services[name]["environment"]["SATPAGE_LINK_EPHEMERIS"] == cfg["target"], name
        assert stack["configs"][cfg["source"]]["file"] == "./link-ephemeris.bin"
    assert "configs" not in services["redis-0"]
    out = CliRunner().invoke(app, ["deploy", "links", "--out", str(tmp_path / "link-ephemeris.bin")])
    assert out.exit_code == 0, out.output
    assert "fits a ConfigMap (1 MiB) and a Docker config (500 KiB)" in out.output
    assert (tmp_path / "link-ephemeris.bin").stat().st_size <= deploy.DOCKER_CONFIG_MAX_BYTES
    e = read_ephemeris(tmp_path / "link-ephemeris.bin")
    assert (e.constellation, e.epoch, e.end_ns) == (deploy.DEFAULT_SPEC, "2023-06-01T00:00:00.000000Z",
                                                    24 * 3600 * 10**9)
    off = yaml.safe_load(deploy.render_stack(deploy.DEFAULT_SPEC, images=deploy.ImageSet(), links=None))
    assert "configs" not in off and "SATPAGE_LINK_EPHEMERIS" not in off["services"]["sat-0"]["environment"]


@pytest.mark.parametrize("args, message", [
    (["--hours", "0"], "horizon 0.0 h"),
    (["--epoch", "noon"], "link epoch 'noon'"),
    (["-c", "walker:7/2/1:550:53"], "walker:7/2/1:550:53"),
])
def test_deploy_links_rejects_bad_input_naming_the_value(tmp_path, args, message):
    out = CliRunner().invoke(app, ["deploy", "links", "--out", str(tmp_path / "l.bin"), *args])
    assert out.exit_code == 2 and message in out.output, out.output


def test_a_live_swarm_stack_gives_the_gateway_its_ephemeris_and_clock():
    stack = yaml.safe_load(deploy.render_stack("walker:8/2/1:550:53", images=deploy.ImageSet(), live_speed=60,
                                               live_clock_start="2026-01-01T00:00:00Z"))
    gw = stack["services"]["gateway"]
    env = gw["environment"]
    assert env["SATPAGE_SPEED"] == "60" and env["SATPAGE_CLOCK_START"] == "2026-01-01T00:00:00Z"
    assert env["SATPAGE_PUSH_LEAD"] == "10s"
    cfg = {c["target"]: c for c in gw["configs"]}[env["SATPAGE_EPHEMERIS"]]
    assert stack["configs"][cfg["source"]]["file"] == "./ephemeris.bin"
    assert "SATPAGE_EPHEMERIS" not in stack["services"]["sat-0"]["environment"]
    # live: the live ephemeris times the links too (one epoch for the clock and the links)
    (link,) = stack["services"]["sat-0"]["configs"]
    assert stack["configs"][link["source"]]["file"] == "./ephemeris.bin"
    plain = yaml.safe_load(deploy.render_stack("walker:8/2/1:550:53", images=deploy.ImageSet(),
                                               links=None))
    assert "configs" not in plain and "SATPAGE_SPEED" not in plain["services"]["gateway"]["environment"]
    with pytest.raises(ValueError, match="lead -1"):
        deploy.render_stack("walker:8/2/1:550:53", images=deploy.ImageSet(), live_speed=60, live_push_lead_s=-1)
    with pytest.raises(ValueError, match="live speed 0"):
        deploy.render_stack("walker:8/2/1:550:53", images=deploy.ImageSet(), live_speed=0)
