"""The Helm chart charts/satpage: lint, schema rejections, and what it renders.

helm comes from .tools/bin (scripts/setup.sh --with-helm, part of `make test`);
the authority for "valid" is helm itself (lint, schema validation, rendering).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from satpage import __version__

pytestmark = pytest.mark.integration  # starts processes: helm

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "satpage"
HELM = ROOT / ".tools" / "bin" / "helm"
# helm built by `go install` has no version stamp and assumes Kubernetes 1.20;
# the chart needs >= 1.27 (GA gRPC probes). 1.34 is the test cluster's version.
KUBE = "1.34.0"


@pytest.fixture(scope="module")
def helm() -> Path:
    if not HELM.exists():
        pytest.fail(f"{HELM} is missing: run scripts/setup.sh --with-helm (make test does)")
    return HELM


def run_helm(helm: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HELM_CACHE_HOME": "/tmp/satpage-helm-cache",
           "HELM_CONFIG_HOME": "/tmp/satpage-helm-config", "HELM_DATA_HOME": "/tmp/satpage-helm-data"}
    return subprocess.run([str(helm), *args], capture_output=True, text=True, timeout=60, env=env)


def render(helm: Path, *args: str, kube: str = KUBE) -> dict[str, list[dict]]:
    """helm template -> {kind: [objects]}."""
    out = run_helm(helm, "template", "t", str(CHART), "--kube-version", kube, *args)
    assert out.returncode == 0, out.stderr
    docs = [d for d in yaml.safe_load_all(out.stdout) if d]
    by_kind: dict[str, list[dict]] = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    return by_kind


def reject(helm: Path, *args: str) -> str:
    out = run_helm(helm, "template", "t", str(CHART), "--kube-version", KUBE, *args)
    assert out.returncode != 0, f"helm accepted {args}"
    assert out.stdout.strip() == "", "nothing may be rendered when a value is wrong"
    return out.stderr


CI_VALUES = sorted((CHART / "ci").glob("*-values.yaml"))


@pytest.mark.parametrize("values", [None, *CI_VALUES], ids=lambda p: p.name if p else "defaults")
def test_helm_lint_is_clean_for_the_defaults_and_every_ci_values_file(helm, values):
    args = ["lint", "--strict", str(CHART), "--kube-version", KUBE]
    if values:
        args += ["-f", str(values)]
    out = run_helm(helm, *args)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 chart(s) failed" in out.stdout
    assert "[WARNING]" not in out.stdout and "[ERROR]" not in out.stdout


@pytest.mark.parametrize(
    ("setting", "named"),
    [
        ("satnode.store=disk", "/satnode/store"),
        ("satnode.grpcPort=seven", "/satnode/grpcPort"),
        ("satnode.grpcPort=70000", "/satnode/grpcPort"),
        ("satnode.replicas=0", "/satnode/replicas"),
        ("satnode.replicas=65", "/satnode/replicas"),
        ("redis.maxmemory=lots", "/redis/maxmemory"),
        ("gateway.service.type=LoadBalancer", "/gateway/service/type"),
        ("satnode.image.pullPolicy=Sometimes", "/satnode/image/pullPolicy"),
        ("constellation.spec=iridium", "/constellation/spec"),
        ("podManagementPolicy=Random", "/podManagementPolicy"),
    ],
)
def test_the_schema_rejects_a_wrong_value_naming_it(helm, setting, named):
    err = reject(helm, "--set", setting)
    assert "schema" in err
    assert named in err


def test_a_values_file_with_a_misspelt_key_is_rejected(helm, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("constellation:\n  spec: walker:24/4/1:550:53\nsatnodes:\n  store: memory\n")
    err = reject(helm, "-f", str(bad))
    assert "'satnodes' not allowed" in err


@pytest.mark.parametrize(
    ("spec", "why"),
    [
        ("walker:150/7/1:500:87", "do not divide into P=7 planes"),
        ("walker-star:150/10/10:500:87", "phasing F=10 must be less than P=10"),
        ("walker:24/4/1:100:53", "altitude 100 km is below 150 km"),
        ("walker:24/4/1:550:200", "inclination 200 deg is outside"),
    ],
)
def test_a_constellation_that_does_not_make_sense_fails_before_anything_renders(helm, spec, why):
    from orbit_model import parse_walker_spec

    with pytest.raises(ValueError):  # the authority agrees the spec is wrong
        parse_walker_spec(spec)
    err = reject(helm, "--set", f"constellation.spec={spec}")
    assert spec in err and why in err


@pytest.mark.parametrize("spec", ["walker-star:150/10/1:500:87", "walker:24/4/1:550:53",
                                  "walker-star:66/6/2:780:86.4", "walker:1/1/0:500:0"])
def test_the_statefulset_runs_one_pod_per_satellite_of_the_spec(helm, spec):
    from orbit_model import parse_walker_spec

    objs = render(helm, "--set", f"constellation.spec={spec}")
    (sts,) = objs["StatefulSet"]
    assert sts["spec"]["replicas"] == parse_walker_spec(spec)[1]
    (cm,) = [c for c in objs["ConfigMap"] if c["metadata"]["name"] == "t-satpage-config"]
    assert cm["data"]["SATPAGE_CONSTELLATION"] == spec


def test_peer_names_are_the_pods_of_the_statefulset_under_the_headless_service(helm):
    objs = render(helm)
    (sts,) = objs["StatefulSet"]
    headless = [s for s in objs["Service"] if s["spec"].get("clusterIP") == "None"]
    assert len(headless) == 1
    assert sts["spec"]["serviceName"] == headless[0]["metadata"]["name"]
    assert headless[0]["spec"]["publishNotReadyAddresses"] is True
    template = objs["ConfigMap"][0]["data"]["SATPAGE_PEER_TEMPLATE"]
    # Pod i of a StatefulSet is <name>-i, resolvable as <name>-i.<serviceName>; dialled fully
    # qualified (a trailing dot: one DNS question, not one per search domain).
    want = f"{sts['metadata']['name']}-42.{sts['spec']['serviceName']}.{sts['metadata']['namespace']}.svc.cluster.local.:7000"
    assert template.replace("{index}", "42") == want
    # satnode takes its index from the hostname's ordinal suffix (services/README.md).
    assert sts["spec"]["template"]["spec"].get("hostname") is None
    selector = headless[0]["spec"]["selector"]
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()


def _containers(pod_spec: dict) -> list[dict]:
    return pod_spec.get("initContainers", []) + pod_spec["containers"]


def test_every_container_is_non_root_read_only_and_bounded(helm):
    objs = render(helm)
    pods = [o["spec"]["template"]["spec"] for o in objs["StatefulSet"] + objs["Deployment"]]
    pods += [o["spec"] for o in objs["Pod"]]
    assert len(pods) == 3
    for pod in pods:
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] != 0
        assert pod["automountServiceAccountToken"] is False
        for c in _containers(pod):
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, c["name"]
            assert sc["allowPrivilegeEscalation"] is False, c["name"]
            assert sc["capabilities"]["drop"] == ["ALL"], c["name"]
            assert {"cpu", "memory"} <= c["resources"]["limits"].keys(), c["name"]
            assert {"cpu", "memory"} <= c["resources"]["requests"].keys(), c["name"]


def test_daemons_have_native_grpc_probes_and_prometheus_annotations(helm):
    objs = render(helm)
    for workload, name in ((objs["StatefulSet"][0], "satnode"), (objs["Deployment"][0], "gateway")):
        tpl = workload["spec"]["template"]
        (c,) = [c for c in tpl["spec"]["containers"] if c["name"] == name]
        grpc_port = next(p["containerPort"] for p in c["ports"] if p["name"] == "grpc")
        metrics_port = next(p["containerPort"] for p in c["ports"] if p["name"] == "metrics")
        # Kubelet's gRPC probes speak no TLS: with TLS on they ask the plain-text,
        # health-only port the daemons open for them (SATPAGE_HEALTH_LISTEN).
        health = objs["ConfigMap"][0]["data"]["SATPAGE_HEALTH_LISTEN"]
        assert c["readinessProbe"]["grpc"] == {"port": 7001}, name
        assert health == ":7001" and grpc_port == 7000
        if name == "satnode":
            # Start-up covers the restore (the overall entry); liveness asks the entry
            # that is SERVING whenever the process serves, so a slow satellite is not
            # restarted; it allows longer than readiness before it acts.
            assert c["startupProbe"]["grpc"] == {"port": 7001}
            assert c["livenessProbe"]["grpc"] == {"port": 7001, "service": "liveness"}
            start, live, ready = c["startupProbe"], c["livenessProbe"], c["readinessProbe"]
            assert start["periodSeconds"] * start["failureThreshold"] >= 300
            assert live["periodSeconds"] * live["failureThreshold"] > ready["periodSeconds"] * ready["failureThreshold"]
            assert live["timeoutSeconds"] >= ready["timeoutSeconds"]
        else:
            assert c["livenessProbe"]["grpc"] == {"port": 7001}
        ann = tpl["metadata"]["annotations"]
        assert ann["prometheus.io/scrape"] == "true"
        assert ann["prometheus.io/port"] == str(metrics_port)
        assert ann["prometheus.io/path"] == "/metrics"
        assert re.fullmatch(r"[0-9a-f]{64}", ann["checksum/config"])


def test_redis_is_a_native_sidecar_with_the_signer_and_beside_satnode_after_the_tls_step(helm):
    sts = render(helm, kube="1.34.0")["StatefulSet"][0]["spec"]["template"]
    new = sts["spec"]
    old = render(helm, kube="1.28.0")["StatefulSet"][0]["spec"]["template"]["spec"]
    side = render(helm, "--set", "redis.nativeSidecar=true", kube="1.34.0")["StatefulSet"][0]["spec"]["template"]["spec"]
    # By default (generated TLS material: satnode gets its certificate itself) Redis is a
    # native sidecar, started (and its pod's address published) before satnode, stopped
    # after it; kubectl's default container is satnode.
    assert [c["name"] for c in new["initContainers"]] == ["redis"]
    assert new["initContainers"][0]["restartPolicy"] == "Always" and "lifecycle" not in new["initContainers"][0]
    assert [c["name"] for c in new["containers"]] == ["satnode"]
    assert sts["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == "satnode"
    assert side == new
    # Before Kubernetes 1.29 (no native sidecars) Redis starts beside satnode, first.
    assert "initContainers" not in old
    assert [c["name"] for c in old["containers"]] == ["redis", "satnode"]
    assert "lifecycle" not in old["containers"][0]
    # With a Secret per satellite (tls.existingSecret, cert-manager) the TLS init step runs
    # alone, then Redis and satnode start in one step, Redis first; Redis outlives
    # satnode's in-flight calls at a stop (preStop sleep, Kubernetes >= 1.30 only).
    user = render(helm, "--set", "tls.existingSecret=mine", kube="1.34.0")["StatefulSet"][0]["spec"]["template"]["spec"]
    assert [c["name"] for c in user["initContainers"]] == ["fetch-tls"]
    assert [c["name"] for c in user["containers"]] == ["redis", "satnode"]
    assert user["containers"][0]["lifecycle"] == {"preStop": {"sleep": {"seconds": 3}}}
    user_side = render(helm, "--set", "redis.nativeSidecar=true", "--set", "tls.existingSecret=mine",
                       kube="1.34.0")["StatefulSet"][0]["spec"]["template"]["spec"]
    assert [c["name"] for c in user_side["initContainers"]] == ["fetch-tls", "redis"]
    assert "restartPolicy" not in user_side["initContainers"][0]
    assert user_side["initContainers"][1]["restartPolicy"] == "Always"
    assert "lifecycle" not in user_side["initContainers"][1]
    assert [c["name"] for c in user_side["containers"]] == ["satnode"]
    for spec in (new, old, user, user_side):
        redis = next(c for c in _containers(spec) if c["name"] == "redis")
        args = redis["args"]
        assert args[args.index("--bind") + 1] == "127.0.0.1"
        assert args[args.index("--maxmemory-policy") + 1] == "noeviction"
        (mount,) = redis["volumeMounts"]
        (vol,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert "emptyDir" in vol


def test_local_images_are_never_pulled_and_registry_images_only_when_absent(helm):
    local = render(helm)
    for c in _containers(local["StatefulSet"][0]["spec"]["template"]["spec"]):
        image = "satnode" if c["name"] == "fetch-tls" else c["name"]  # the init step is satnode's
        assert c["image"] == f"satpage.local/{image}:{__version__}"
        assert c["imagePullPolicy"] == "Never"
    remote = render(helm, "-f", str(CHART / "ci" / "registry-values.yaml"))
    for c in _containers(remote["StatefulSet"][0]["spec"]["template"]["spec"]):
        assert c["image"].startswith("registry.example.com/satpage/")
        assert c["imagePullPolicy"] == "IfNotPresent"
    pods = render(helm, "--set", "satnode.image.pullPolicy=Always", "--set", "tls.existingSecret=mine")[
        "StatefulSet"][0]["spec"]["template"]["spec"]
    assert {c["name"]: c["imagePullPolicy"] for c in _containers(pods)} == {
        "fetch-tls": "Always", "redis": "Never", "satnode": "Always"}


def test_chart_app_version_is_the_package_version_that_images_are_tagged_with():
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == __version__
    assert chart["apiVersion"] == "v2"


def test_the_pdb_and_the_test_pod_cover_the_satellites(helm):
    objs = render(helm)
    (pdb,) = objs["PodDisruptionBudget"]
    sts = objs["StatefulSet"][0]
    assert pdb["spec"]["selector"]["matchLabels"] == sts["spec"]["selector"]["matchLabels"]
    (test,) = objs["Pod"]
    assert test["metadata"]["annotations"]["helm.sh/hook"] == "test"
    addrs = [c["command"][1] for c in _containers(test["spec"])]
    assert addrs == ["-addr=t-satpage-0.t-satpage-headless:7000",
                     "-addr=t-satpage-149.t-satpage-headless:7000",
                     "-addr=t-satpage-gateway:7000"]


def test_a_store_needing_redis_without_redis_is_rejected(helm):
    err = reject(helm, "--set", "redis.enabled=false")
    assert "redis.enabled is false" in err


def test_the_readme_values_table_is_generated_from_values_yaml():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "chart-readme.py"), str(CHART), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def _leaves(node: dict, prefix: str = "") -> list[str]:
    out = []
    for k, v in node.items():
        path = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out += _leaves(v, path + ".")
        else:
            out.append(path)
    return out


def test_every_value_is_documented_and_known_to_the_schema():
    import importlib.util

    spec = importlib.util.spec_from_file_location("chart_readme", ROOT / "scripts" / "chart-readme.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = (CHART / "values.yaml").read_text()
    documented = {k for k, _ in mod.documented_keys(text)}
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["additionalProperties"] is False
    for leaf in _leaves(yaml.safe_load(text)):
        parts = leaf.split(".")
        assert any(".".join(parts[:n]) in documented for n in range(1, len(parts) + 1)), leaf
        node = schema
        for part in parts:
            if "$ref" in node:
                node = schema["definitions"][node["$ref"].rsplit("/", 1)[1]]
            if node.get("type") == "object" and "properties" not in node:
                break  # free-form Kubernetes objects (securityContext, affinity)
            assert part in node["properties"], leaf
            node = node["properties"][part]


def test_every_setting_the_chart_passes_is_in_the_daemons_configuration_contract(helm):
    contract = set(re.findall(r'"(SATPAGE_[A-Z_]+)"', (ROOT / "services" / "internal" / "config" /
                                                       "config.go").read_text()))
    assert contract, "services/internal/config/config.go names no SATPAGE_ variables"
    objs = render(helm)
    passed = set(objs["ConfigMap"][0]["data"])
    for w in objs["StatefulSet"] + objs["Deployment"]:
        for c in w["spec"]["template"]["spec"]["containers"]:
            passed |= {e["name"] for e in c.get("env", [])}
    assert passed <= contract, passed - contract


def test_an_isl_schedule_is_mounted_into_every_satnode_and_rolls_the_pods(helm, tmp_path):
    doc = {"format": "satpage-isl-schedule/1", "constellation": "walker-star:150/10/1:500:87",
           "latitude_cutoff_deg": 60.0, "step_ns": 60 * 10**9, "snapshots": 2, "high": [[0, 1, 2]]}
    f = tmp_path / "isl-schedule.json"
    f.write_text(json.dumps(doc))
    plain = render(helm)
    objs = render(helm, "--set-file", f"constellation.islSchedule={f}")
    cms = {c["metadata"]["name"]: c for c in objs["ConfigMap"]}
    config = cms["t-satpage-config"]
    (sched,) = [c for n, c in cms.items() if n.endswith("-isl-schedule")]
    assert json.loads(sched["data"]["isl-schedule.json"]) == doc
    path = config["data"]["SATPAGE_ISL_SCHEDULE"]
    (sts,) = objs["StatefulSet"]
    pod = sts["spec"]["template"]
    satnode = next(c for c in pod["spec"]["containers"] if c["name"] == "satnode")
    (mount,) = [m for m in satnode["volumeMounts"] if m["name"] not in ("tls", "token-verify", "signer-token", "ca")]
    assert path == mount["mountPath"] + "/isl-schedule.json" and mount["readOnly"] is True
    vol = next(v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
    assert vol["configMap"]["name"] == sched["metadata"]["name"]
    # the checksum covers the schedule: a new one rolls the pods
    old = plain["StatefulSet"][0]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert pod["metadata"]["annotations"]["checksum/config"] != old
    assert "SATPAGE_ISL_SCHEDULE" not in plain["ConfigMap"][0]["data"]
    assert [m["name"] for m in next(c for c in plain["StatefulSet"][0]["spec"]["template"]["spec"]
                                    ["containers"] if c["name"] == "satnode")["volumeMounts"]] == [
                                        "tls", "signer-token", "ca", "token-verify"]


# --- Security (docs/security.md) ---------------------------------------------------

def _secret_files(objs, tmp_path):
    """The generated Secrets as a `--tls-dir` directory (docs/security.md layout), the
    CA's key as ca-key.pem (what the gateway's signer holds)."""
    import base64

    names = {"gateway": ("gateway.pem", "gateway-key.pem"), "client": ("client.pem", "client-key.pem"),
             "token": ("token-verify-keys.pem", "token-signing-key.pem"), "ca": ("ca.pem", "ca-key.pem")}
    secrets = {s["metadata"]["name"]: s for s in objs["Secret"]}
    for name, secret in secrets.items():
        crt, key = names[name.removeprefix("t-satpage-")]
        data = {k: base64.b64decode(v) for k, v in secret["data"].items()}
        (tmp_path / crt).write_bytes(data["tls.crt"])
        (tmp_path / key).write_bytes(data["tls.key"])
        assert data["ca.crt"] == secrets_ca(secrets)
    return secrets


def secrets_ca(secrets) -> bytes:
    import base64

    return base64.b64decode(secrets["t-satpage-ca"]["data"]["tls.crt"])


def test_tls_is_on_by_default_with_a_generated_constellation_ca(helm, tmp_path):
    from cryptography import x509
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        PublicFormat,
        load_pem_private_key,
    )
    from cryptography.x509.verification import PolicyBuilder, Store

    objs = render(helm, "--set", "constellation.spec=walker-star:6/2/0:500:87")
    secrets = _secret_files(objs, tmp_path)
    # One Secret per role that has no signer to ask, each in cert-manager's layout, every
    # one naming the same CA; none per satellite (each makes its own key at start).
    assert set(secrets) == {f"t-satpage-{r}" for r in ("gateway", "client", "token", "ca")}
    assert {s["type"] for s in secrets.values()} == {"kubernetes.io/tls"}
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.pem").read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
    # The CA's key (the signer's) is the CA certificate's, and the satellites check the
    # signer against that certificate, from a ConfigMap.
    ca_key = load_pem_private_key((tmp_path / "ca-key.pem").read_bytes(), None)
    raw = (Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    assert ca_key.public_key().public_bytes(*raw) == ca.public_key().public_bytes(*raw)
    cms = {c["metadata"]["name"]: c for c in objs["ConfigMap"]}
    assert cms["t-satpage-ca"]["data"]["ca.pem"].encode() == (tmp_path / "ca.pem").read_bytes()
    store = Store([ca])
    # The signer serves with the gateway's certificate: satellites dial it as gateway.satpage.
    gw = x509.load_pem_x509_certificate((tmp_path / "gateway.pem").read_bytes())
    PolicyBuilder().store(store).build_server_verifier(x509.DNSName("gateway.satpage")).verify(gw, [])
    # The token key's public half, in a certificate: what satellites verify with.
    signing = load_pem_private_key((tmp_path / "token-signing-key.pem").read_bytes(), None)
    verify = (tmp_path / "token-verify-keys.pem").read_bytes()
    assert b"PRIVATE" not in verify
    raw = (Encoding.Raw, PublicFormat.Raw)
    assert x509.load_pem_x509_certificate(verify).public_key().public_bytes(*raw) == \
        signing.public_key().public_bytes(*raw)
    config = cms["t-satpage-config"]["data"]
    assert config["SATPAGE_TLS_DIR"] == "/etc/satpage-tls" and "SATPAGE_INSECURE" not in config
    sums = set()
    sts, gateway = objs["StatefulSet"][0], objs["Deployment"][0]
    for workload in (sts, gateway):
        tpl = workload["spec"]["template"]
        sums.add(tpl["metadata"]["annotations"]["checksum/tls"])
    assert len(sums) == 1  # one material, one checksum
    # The gateway reads its material; satnode writes its own pair into its pod's memory.
    (gwc,) = gateway["spec"]["template"]["spec"]["containers"]
    assert {"name": "tls", "mountPath": "/etc/satpage-tls", "readOnly": True} in gwc["volumeMounts"]
    (satnode,) = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "satnode"]
    assert {"name": "tls", "mountPath": "/etc/satpage-tls"} in satnode["volumeMounts"]
    # Fresh material (helm template cannot look the old Secrets up) rolls the pods.
    again = render(helm, "--set", "constellation.spec=walker-star:6/2/0:500:87")
    assert again["StatefulSet"][0]["spec"]["template"]["metadata"]["annotations"]["checksum/tls"] not in sums


def _key_files(objs: dict[str, list[dict]]) -> dict[tuple[str, str], dict[str, str]]:
    """What every container of every workload can read, as {(workload, container):
    {file: "secret/key"}}: the Secret items its volumes project, and for the
    emptyDir a satellite's init step fills, what that step writes (its --file
    arguments, from the Secret its --secret names). Kubelet mounts only the items
    listed, so these are all the key files a container holds."""
    out = {}
    workloads = [(o["metadata"]["name"], o["spec"]["template"]["spec"]) for k in ("StatefulSet", "Deployment")
                 for o in objs.get(k, [])]
    workloads += [(o["metadata"]["name"], o["spec"]) for o in objs.get("Pod", [])]
    for name, pod in workloads:
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        written = {}  # emptyDir name -> files an init step writes there
        for c in pod.get("initContainers", []):
            if c["name"] == "fetch-tls":
                args = dict(a.removeprefix("--").split("=", 1) for a in c["args"][1:] if not a.startswith("--file="))
                (mount,) = [m for m in c["volumeMounts"] if m["mountPath"] == args["out"]]
                files = [a.removeprefix("--file=").split("=", 1) for a in c["args"] if a.startswith("--file=")]
                written[mount["name"]] = {f: f"{args['secret']}/{k}" for k, f in files}
        for c in _containers(pod):
            files = {}
            for m in c.get("volumeMounts", []):
                v = volumes[m["name"]]
                sources = v["projected"]["sources"] if "projected" in v else [v]
                for src in sources:
                    if "secret" in src:
                        sec = src["secret"]
                        assert "items" in sec, f"{name}/{c['name']} mounts all of Secret {sec.get('secretName')}"
                        files |= {it["path"]: f"{sec['name']}/{it['key']}" for it in sec["items"]}
                    if "serviceAccountToken" in src:
                        tok = src["serviceAccountToken"]
                        aud = tok.get("audience")  # none: the API server's
                        files[tok["path"]] = "serviceaccount/token" + (f" for {aud}" if aud else "")
                if "emptyDir" in v and c["name"] != "fetch-tls":
                    files |= written.get(m["name"], {})
            out[(name, c["name"])] = files
    return out


def test_every_workload_mounts_only_its_own_keys(helm):
    """The chart's defaults: no pod holds a private key other than its own (a satellite
    holds none at all from the cluster: it makes its key in process), only the gateway
    holds the token signing key and the CA's key (its signer), satellites verify with a
    certificate and hold one token, one only the signer accepts."""
    objs = render(helm)
    assert {k for k in objs if k in ("StatefulSet", "Deployment", "DaemonSet", "Job", "CronJob", "Pod",
                                     "ReplicaSet")} == {"StatefulSet", "Deployment", "Pod"}
    assert _key_files(objs) == {
        ("t-satpage", "redis"): {},
        ("t-satpage", "satnode"): {"token-verify-keys.pem": "t-satpage-token/tls.crt",
                                   "token": "serviceaccount/token for satpage-signer"},
        ("t-satpage-gateway", "gateway"): {
            "ca.pem": "t-satpage-gateway/ca.crt", "gateway.pem": "t-satpage-gateway/tls.crt",
            "gateway-key.pem": "t-satpage-gateway/tls.key", "token-signing-key.pem": "t-satpage-token/tls.key",
            "token-verify-keys.pem": "t-satpage-token/tls.crt", "ca-key.pem": "t-satpage-ca/tls.key",
            "token": "serviceaccount/token"},
        **{("t-satpage-test-health", c): {"ca.pem": "t-satpage-client/ca.crt"}
           for c in ("check-0", "check-1", "check")},
    }
    (sts,) = objs["StatefulSet"]
    pod = sts["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["initContainers"]] == ["redis"]  # no fetch-tls: its sidecar only
    (satnode,) = [c for c in pod["containers"] if c["name"] == "satnode"]
    env = {e["name"]: e.get("value") for e in satnode["env"]}
    assert env["SATPAGE_TOKEN_VERIFY_KEYS"] == "/etc/satpage-token/token-verify-keys.pem"
    assert env["SATPAGE_CERT_SIGNER"] == "t-satpage-signer:7002"
    mounts = {m["name"]: m["mountPath"] for m in satnode["volumeMounts"]}
    assert env["SATPAGE_CERT_SIGNER_TOKEN"] == mounts["signer-token"] + "/token"
    assert env["SATPAGE_CERT_SIGNER_CA"] == mounts["ca"] + "/ca.pem"
    vols = {v["name"]: v for v in pod["volumes"]}
    assert vols["tls"]["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Mi"}  # the key never touches the node's disk
    (tok,) = vols["signer-token"]["projected"]["sources"]
    assert tok["serviceAccountToken"] == {"path": "token", "audience": "satpage-signer", "expirationSeconds": 600}
    assert vols["ca"]["configMap"]["name"] == "t-satpage-ca"
    assert pod["serviceAccountName"] == "t-satpage" and pod["automountServiceAccountToken"] is False
    # The signer: the gateway, under its own ServiceAccount, which may create TokenReviews
    # and nothing else (no Role reads any Secret); it signs for the satellites' account,
    # pod t-satpage-<i>, and nothing else.
    (gw,) = objs["Deployment"]
    gpod = gw["spec"]["template"]["spec"]
    assert gpod["serviceAccountName"] == "t-satpage-gateway" and gpod["automountServiceAccountToken"] is False
    genv = {e["name"]: e.get("value") for e in gpod["containers"][0]["env"]}
    assert (genv["SATPAGE_SIGNER_LISTEN"], genv["SATPAGE_SIGNER_AUDIENCE"], genv["SATPAGE_SIGNER_SERVICE_ACCOUNT"],
            genv["SATPAGE_SIGNER_STATEFULSET"]) == (":7002", "satpage-signer", "default:t-satpage", "t-satpage")
    assert genv["SATPAGE_SIGNER_DNS_NAMES"].split(",") == [
        "t-satpage-{index}.t-satpage-headless", "t-satpage-{index}.t-satpage-headless.default.svc"]
    assert {a["metadata"]["name"] for a in objs["ServiceAccount"]} == {"t-satpage", "t-satpage-gateway"}
    assert "Role" not in objs and "RoleBinding" not in objs
    (role,) = objs["ClusterRole"]
    assert role["rules"] == [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]}]
    (binding,) = objs["ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "t-satpage-gateway", "namespace": "default"}]
    # Satellites reach it by a Service that lists the gateway before it is Ready.
    (svc,) = [s for s in objs["Service"] if s["metadata"]["name"] == "t-satpage-signer"]
    assert svc["spec"]["publishNotReadyAddresses"] is True
    assert svc["spec"]["ports"] == [{"name": "signer", "port": 7002, "targetPort": "signer", "protocol": "TCP"}]
    assert svc["spec"]["selector"]["app.kubernetes.io/component"] == "gateway"
    # The Secrets the chart makes are the ones the workloads name.
    made = {s["metadata"]["name"]: set(s["data"]) for s in objs["Secret"]}
    assert set(made) == {"t-satpage-gateway", "t-satpage-client", "t-satpage-token", "t-satpage-ca"}
    assert all(keys == {"tls.crt", "tls.key", "ca.crt"} for keys in made.values())


def test_the_generated_material_needs_the_gateway_that_signs(helm):
    assert "needs gateway.enabled" in reject(helm, "--set", "gateway.enabled=false")
    objs = render(helm, "--set", "gateway.enabled=false", "--set", "tls.existingSecret=mine")
    assert "Deployment" not in objs and "ClusterRole" not in objs


def test_a_user_secret_and_cert_manager_keep_every_key_in_its_pod(helm):
    """With a Secret per satellite, an init step reads the pod's own with a token that may
    read the satellites' Secrets and nothing else, mounted into that step alone."""
    sat = {"ca.pem": "t-satpage-sat-{index}/ca.crt", "satellite-{index}.pem": "t-satpage-sat-{index}/tls.crt",
           "satellite-{index}-key.pem": "t-satpage-sat-{index}/tls.key",
           "token-verify-keys.pem": "t-satpage-token/tls.crt"}
    cm = render(helm, "--api-versions", "cert-manager.io/v1")
    assert "Secret" not in cm
    assert _key_files(cm) == {
        ("t-satpage", "fetch-tls"): {"token": "serviceaccount/token"},
        ("t-satpage", "redis"): {},
        ("t-satpage", "satnode"): sat,
        ("t-satpage-gateway", "gateway"): {
            "ca.pem": "t-satpage-gateway/ca.crt", "gateway.pem": "t-satpage-gateway/tls.crt",
            "gateway-key.pem": "t-satpage-gateway/tls.key", "token-signing-key.pem": "t-satpage-token/tls.key",
            "token-verify-keys.pem": "t-satpage-token/tls.crt"},
        **{("t-satpage-test-health", c): {"ca.pem": "t-satpage-client/ca.crt"}
           for c in ("check-0", "check-1", "check")},
    }
    # {index} is the pod's own ordinal: the init step (services/internal/podkeys) reads it
    # from the hostname.
    (role,) = cm["Role"]
    (rule,) = role["rules"]
    assert (rule["apiGroups"], rule["resources"], rule["verbs"]) == ([""], ["secrets"], ["get"])
    assert rule["resourceNames"] == [f"t-satpage-sat-{i}" for i in range(150)]
    (binding,) = cm["RoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "t-satpage", "namespace": "default"}]
    assert "ClusterRole" not in cm and "SATPAGE_CERT_SIGNER" not in str(cm["StatefulSet"])
    (sts,) = cm["StatefulSet"]
    (tls,) = [v for v in sts["spec"]["template"]["spec"]["volumes"] if v["name"] == "tls"]
    assert tls["emptyDir"] == {"medium": "Memory", "sizeLimit": "1Mi"}

    user = _key_files(render(helm, "--set", "tls.existingSecret=mine"))
    assert user[("t-satpage", "satnode")] == {
        "ca.pem": "mine/ca.pem", "satellite-{index}.pem": "mine/satellite-{index}.pem",
        "satellite-{index}-key.pem": "mine/satellite-{index}-key.pem",
        "token-verify-keys.pem": "mine/token-verify-keys.pem"}
    assert set(user[("t-satpage-gateway", "gateway")]) == {
        "ca.pem", "gateway.pem", "gateway-key.pem", "token-signing-key.pem", "token-verify-keys.pem"}
    assert user[("t-satpage-test-health", "check")] == {"ca.pem": "mine/ca.pem"}


def test_insecure_is_refused_unless_allowed_beside_it(helm):
    err = reject(helm, "--set", "tls.enabled=false")
    assert "allowInsecure" in err
    objs = render(helm, "--set", "tls.enabled=false", "--set", "tls.allowInsecure=true")
    assert "Secret" not in objs
    assert objs["ConfigMap"][0]["data"]["SATPAGE_INSECURE"] == "true"
    (c,) = [c for c in objs["StatefulSet"][0]["spec"]["template"]["spec"]["containers"] if c["name"] == "satnode"]
    assert c["readinessProbe"]["grpc"] == {"port": 7000}


def test_a_user_secret_replaces_the_generated_material(helm):
    objs = render(helm, "--set", "tls.existingSecret=my-constellation-tls")
    assert "Secret" not in objs
    tpl = objs["StatefulSet"][0]["spec"]["template"]
    assert re.fullmatch(r"[0-9a-f]{64}", tpl["metadata"]["annotations"]["checksum/tls"])
    assert objs["Role"][0]["rules"][0]["resourceNames"] == ["my-constellation-tls"]
    (pod,) = objs["Pod"]
    cmds = [c["command"] for c in pod["spec"]["initContainers"] + pod["spec"]["containers"]]
    assert all("-tls" in c and "-tls-ca-cert=/etc/satpage-tls/ca.pem" in c for c in cmds)
    assert [c[-1] for c in cmds] == ["-tls-server-name=satellite-0.satpage",
                                      "-tls-server-name=satellite-149.satpage", "-tls-server-name=gateway.satpage"]


# --- Live mode (docs/live.md) ---------------------------------------------------------

def test_live_mode_gives_the_gateway_its_ephemeris_and_clock(helm, tmp_path):
    import base64
    import datetime as dt

    from orbit_model.io import read_ephemeris
    from satpage.live import write_live_ephemeris

    eph = tmp_path / "eph.bin"
    write_live_ephemeris(eph, "walker-star:150/10/1:500:87", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 1.0)
    b64 = tmp_path / "eph.b64"
    b64.write_text(base64.b64encode(eph.read_bytes()).decode())
    plain = render(helm)
    objs = render(helm, "--set", "live.enabled=true", "--set", "live.speed=60",
                  "--set", "live.clockStart=2026-01-01T00:00:00Z", "--set-file", f"live.ephemerisBase64={b64}")
    cms = {c["metadata"]["name"]: c for c in objs["ConfigMap"]}
    config = cms["t-satpage-config"]
    (ephcm,) = [c for n, c in cms.items() if n.endswith("-ephemeris")]
    back = tmp_path / "back.bin"
    back.write_bytes(base64.b64decode(ephcm["binaryData"]["ephemeris.bin"]))
    assert read_ephemeris(back).constellation == "walker-star:150/10/1:500:87"
    assert config["data"]["SATPAGE_SPEED"] == "60"
    assert config["data"]["SATPAGE_PUSH_LEAD"] == "10s"  # the documented default
    assert config["data"]["SATPAGE_CLOCK_START"] == "2026-01-01T00:00:00Z"
    path = config["data"]["SATPAGE_EPHEMERIS"]
    (gw,) = objs["Deployment"]
    pod = gw["spec"]["template"]
    (c,) = pod["spec"]["containers"]
    (mount,) = [m for m in c["volumeMounts"] if m["name"] == "ephemeris"]
    assert path == mount["mountPath"] + "/ephemeris.bin" and mount["readOnly"] is True
    vol = next(v for v in pod["spec"]["volumes"] if v["name"] == "ephemeris")
    assert vol["configMap"]["name"] == ephcm["metadata"]["name"]
    old = plain["Deployment"][0]["spec"]["template"]["metadata"]["annotations"]["checksum/config"]
    assert pod["metadata"]["annotations"]["checksum/config"] != old
    assert "SATPAGE_EPHEMERIS" not in plain["ConfigMap"][0]["data"]
    lint = run_helm(helm, "lint", str(CHART), "--kube-version", KUBE, "--set", "live.enabled=true",
                    "--set-file", f"live.ephemerisBase64={b64}")
    assert lint.returncode == 0, lint.stdout + lint.stderr


def _links(objs) -> tuple[dict, dict[str, dict]]:
    """The daemons' settings and, per workload, the volume its `links` mount reads."""
    (config,) = [c for c in objs["ConfigMap"] if "SATPAGE_CONSTELLATION" in c.get("data", {})]
    volumes = {}
    for w in objs["StatefulSet"] + objs["Deployment"]:
        pod = w["spec"]["template"]["spec"]
        main = next(c for c in pod["containers"] if c["name"] in ("satnode", "gateway"))
        mounts = {m["name"]: m for m in main.get("volumeMounts", [])}
        if "links" in mounts:
            vol = next(v for v in pod["volumes"] if v["name"] == "links")
            (item,) = vol["configMap"]["items"]
            volumes[main["name"]] = {"file": f"{mounts['links']['mountPath']}/{item['path']}",
                                     "configMap": vol["configMap"]["name"], "key": item["key"],
                                     "readOnly": mounts["links"]["readOnly"]}
    return config["data"], volumes


def test_link_emulation_reads_positions_from_the_links_configmap_in_every_satnode_and_the_gateway(helm, tmp_path):
    """On by default, but without positions nothing is mounted (the daemons log 'link
    emulation off'); links.configMap mounts its link-ephemeris.bin into satnode and the
    gateway; live mode times the links from the live ephemeris; emulate=false turns it off."""
    import base64
    import datetime as dt

    from satpage.live import write_live_ephemeris

    data, volumes = _links(render(helm))
    assert data["SATPAGE_EMULATE_LINKS"] == "true" and "SATPAGE_LINK_EPHEMERIS" not in data and volumes == {}
    data, volumes = _links(render(helm, "--set", "links.configMap=sky", "--set", "links.islCapacityGbps=20",
                                  "--set-json", "links.perHopProcessingMs=0.25"))
    assert (data["SATPAGE_ISL_CAPACITY_GBPS"], data["SATPAGE_PER_HOP_PROCESSING_MS"]) == ("20", "0.25")
    want = {"file": data["SATPAGE_LINK_EPHEMERIS"], "configMap": "sky", "key": "link-ephemeris.bin",
            "readOnly": True}
    assert volumes == {"satnode": want, "gateway": want}
    eph = tmp_path / "eph.bin"
    write_live_ephemeris(eph, "walker-star:150/10/1:500:87", dt.datetime(2026, 1, 1, tzinfo=dt.UTC), 1.0)
    (tmp_path / "eph.b64").write_text(base64.b64encode(eph.read_bytes()).decode())
    objs = render(helm, "--set", "live.enabled=true", "--set-file", f"live.ephemerisBase64={tmp_path / 'eph.b64'}",
                  "--set", "links.configMap=sky")
    data, volumes = _links(objs)
    (live,) = [c["metadata"]["name"] for c in objs["ConfigMap"] if "ephemeris.bin" in c.get("binaryData", {})]
    want = {"file": data["SATPAGE_LINK_EPHEMERIS"], "configMap": live, "key": "ephemeris.bin", "readOnly": True}
    assert volumes == {"satnode": want, "gateway": want}
    data, volumes = _links(render(helm, "--set", "links.emulate=false", "--set", "links.configMap=sky"))
    assert data["SATPAGE_EMULATE_LINKS"] == "false" and "SATPAGE_LINK_EPHEMERIS" not in data and volumes == {}
    assert "configMap" in reject(helm, "--set", "links.configMap=Not_A_Name")
    assert "islCapacityGbps" in reject(helm, "--set", "links.islCapacityGbps=0")


def test_live_mode_without_an_ephemeris_or_with_a_bad_speed_is_refused(helm):
    assert "ephemerisBase64" in reject(helm, "--set", "live.enabled=true")
    assert "speed" in reject(helm, "--set", "live.speed=0")
    assert "pushLeadSeconds" in reject(helm, "--set", "live.pushLeadSeconds=-1")


def test_cert_manager_issues_the_material_when_the_cluster_has_it(helm):
    spec = ("--set", "constellation.spec=walker-star:6/2/0:500:87")
    objs = render(helm, *spec, "--api-versions", "cert-manager.io/v1")
    assert "Secret" not in objs
    certs = {c["metadata"]["name"]: c["spec"] for c in objs["Certificate"]}
    assert certs["t-satpage-ca"]["isCA"] is True
    for i in range(6):
        c = certs[f"t-satpage-sat-{i}"]
        assert c["dnsNames"][:2] == [f"satellite-{i}.satpage", f"t-satpage-{i}.t-satpage-headless"]
        assert c["issuerRef"]["name"] == "t-satpage-ca" and c["privateKey"]["algorithm"] == "ECDSA"
    assert certs["t-satpage-token"]["privateKey"] == {"algorithm": "Ed25519", "encoding": "PKCS8"}
    assert {i["metadata"]["name"]: list(i["spec"]) for i in objs["Issuer"]} == {
        "t-satpage-selfsigned": ["selfSigned"], "t-satpage-ca": ["ca"]}

    # The pods name these Secrets exactly as they name the chart's own (same keys).
    files = _key_files(objs)
    assert files[("t-satpage", "satnode")]["satellite-{index}-key.pem"] == "t-satpage-sat-{index}/tls.key"
    assert files[("t-satpage-gateway", "gateway")]["token-signing-key.pem"] == "t-satpage-token/tls.key"
    # Asked for Helm's own material, the chart makes it even where cert-manager is.
    helm_made = render(helm, *spec, "--api-versions", "cert-manager.io/v1", "--set", "tls.source=helm")
    assert "Certificate" not in helm_made and len(helm_made["Secret"]) == 4
