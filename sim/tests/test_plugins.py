"""Strategy plugins: a class in a module of the working directory (``module:Class``) or
of an installed package (entry point ``satpage.strategies``) runs through compare,
reports, charts, view data and sweeps like a built-in one, in-process and on Dask; a bad
plugin is an error naming it, exit 2.

The authority: the plugin here is hot-k written again outside pager, so its figures
must equal the built-in hot-k's with the same k, to the last count."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import pager
from satpage.cli import main

SATPAGE = Path(sys.executable).with_name("satpage")
TINY = ["--sessions", "40", "--set", "time.duration_s=5400", "--set", "run.chunk_sessions=20",
        "--set", "sessions.lifetime_mean_s=900", "--set", "network.load_bins=6"]

TOPK = '''
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

import pager


@pager.handover_rule
def most_used(owner, uses, last_use, new_pos, params, out):
    order = np.argsort(-uses.astype(np.int64), kind="mergesort")
    n = 0
    for i in range(min(params[0], order.size)):
        if uses[order[i]] == 0:
            break
        out[n] = order[i]
        n += 1
    return n


@dataclass(frozen=True)
class TopK:
    """On-demand plus the k most used pages at each handover (hot-k, again)."""

    k: int = 8
    name: ClassVar[str] = "{name}"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[pager.EventKind] = pager.EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = most_used

    def __post_init__(self):
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {{self.k}}")

    def params(self):
        return np.array([self.k], dtype=np.int64)
'''


def satpage(args, cwd, env_extra=None, check=True):
    env = {**os.environ, "COLUMNS": "80", **(env_extra or {})}
    r = subprocess.run([str(SATPAGE), *args], cwd=cwd, capture_output=True, text=True,
                       env=env, timeout=600)
    if check:
        assert r.returncode == 0, r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("plugin")
    (d / "topmod.py").write_text(TOPK.format(name="top-k"))
    return d


@pytest.fixture(scope="module")
def in_process(plugin_dir):
    out = plugin_dir / "out"
    r = satpage(["compare", *TINY, "--strategies", "hot-k,topmod:TopK", "--set",
                 "strategies.params.hot-k.k=5", "--set", "strategies.params.TopK.k=5", "--json",
                 "--out", str(out)], cwd=plugin_dir)
    return json.loads(r.stdout), out


@pytest.mark.integration
def test_a_plugin_from_the_working_directory_gives_the_builtin_it_reimplements(in_process):
    result, _ = in_process
    st = result["strategies"]
    assert list(st) == ["hot-k", "top-k"]
    assert st["top-k"] == st["hot-k"]
    assert st["top-k"]["handover_transfer_bytes"] > 0
    assert result["config"]["strategies"]["compare"] == ["hot-k", "topmod:TopK"]
    assert result["config"]["strategies"]["params"]["TopK"] == {"k": 5}
    assert result["config"]["strategies"]["params"]["hot-k"] == {"k": 5}


@pytest.mark.integration
@pytest.mark.slow
def test_a_plugin_runs_on_dask_local_2_with_the_same_figures(plugin_dir, in_process):
    r = satpage(["compare", *TINY, "--strategies", "hot-k,topmod:TopK", "--set",
                 "strategies.params.hot-k.k=5", "--set", "strategies.params.TopK.k=5", "--json",
                 "--dask", "local:2"], cwd=plugin_dir)
    got = json.loads(r.stdout)
    assert got["dask"] == "local:2" and got["processes"] == 2
    assert got["strategies"] == in_process[0]["strategies"]


@pytest.mark.integration
def test_a_plugin_has_its_reports_charts_and_view_data(in_process):
    result, out = in_process
    assert "top-k" in (out / "report.md").read_text()
    assert sum(line.split(",")[3] == "top-k"
               for line in (out / "costs.csv").read_text().splitlines()) == 1
    assert (out / "cost_per_strategy.png").stat().st_size > 0
    view = json.loads((out / "view.json").read_text())
    assert view["strategies"] == ["hot-k", "top-k"]


@pytest.mark.integration
def test_a_plugin_setting_sweeps(plugin_dir):
    out = plugin_dir / "sweep"
    r = satpage(["sweep", *TINY, "--strategies", "topmod:TopK", "--vary",
                 "strategies.params.TopK.k=0,3", "--out", str(out), "--json"],
                cwd=plugin_dir, check=False)
    assert r.returncode == 2 and "'topmod:TopK'" in r.stderr and "k must be at least 1" in r.stderr
    r = satpage(["sweep", *TINY, "--strategies", "topmod:TopK", "--vary",
                 "strategies.params.TopK.k=1,3", "--out", str(out), "--json"], cwd=plugin_dir)
    rows = json.loads(r.stdout)["rows"]
    assert [(row["strategies.params.TopK.k"], row["strategy"]) for row in rows] == [
        (1, "top-k"), (3, "top-k")]
    assert rows[0]["handover_transfer_bytes"] < rows[1]["handover_transfer_bytes"]


@pytest.mark.integration
def test_an_installed_package_registers_a_strategy_by_entry_point(tmp_path):
    site = tmp_path / "site"
    pkg = site / "satpage_test_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(TOPK.format(name="top-k-installed"))
    info = site / "satpage_test_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: satpage-test-plugin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[satpage.strategies]\ntop-k-installed = satpage_test_plugin:TopK\n")
    elsewhere = tmp_path / "run"
    elsewhere.mkdir()
    r = satpage(["compare", *TINY, "--strategies", "hot-k,top-k-installed", "--set",
                 "strategies.params.hot-k.k=4", "--set", "strategies.params.top-k-installed.k=4",
                 "--json"], cwd=elsewhere, env_extra={"PYTHONPATH": str(site)})
    st = json.loads(r.stdout)["strategies"]
    assert st["top-k-installed"] == st["hot-k"]


BAD = {
    "a module that is not there": ("nosuchmod", None, "cannot import nosuchmod"),
    "a module that fails to import": ("broken", "import numpy\nraise RuntimeError('boom')\n",
                                      "RuntimeError: boom"),
    "a class that is not there": ("okmod:Nope", TOPK.format(name="ok"), "no member 'Nope'"),
    "a missing member": ("nosel:TopK", TOPK.format(name="nosel").replace(
        "    select: ClassVar[Any] = most_used\n", ""), "missing member 'select'"),
    "a plain function as its rule": ("plain:TopK", TOPK.format(name="plain").replace(
        "@pager.handover_rule\n", ""), "plain Python function"),
    "a rule of the wrong parameters": ("threeargs:TopK", TOPK.format(name="three").replace(
        "def most_used(owner, uses, last_use, new_pos, params, out)",
        "def most_used(owner, uses, params)"),
        "handover rule 'most_used' takes (owner, uses, params)"),
    "a rule compiled for other types": ("othersig:TopK", TOPK.format(name="other").replace(
        "@pager.handover_rule\n", "@numba.njit('int64(int64[::1])')\n").replace(
        "def most_used(owner, uses, last_use, new_pos, params, out):",
        "def most_used(owner):\n    return 0\n\n\ndef unused(owner, uses, last_use, new_pos, "
        "params, out):").replace("import pager\n", "import numba\n\nimport pager\n"),
        "not pager.SELECT_SIGNATURE"),
    "an unknown setting": ("unknownset:TopK", TOPK.format(name="unk"),
                           "unknown setting 'kk'"),
    "a bad setting": ("badset:TopK", TOPK.format(name="badset"), "k must be at least 1"),
    "blocking migration without its downtime": ("nodown:TopK", TOPK.format(name="nodown").replace(
        "    select: ClassVar[Any] = most_used\n",
        "    select: ClassVar[Any] = most_used\n"
        "    network: ClassVar[Any] = pager.NetworkUse(blocking_migration=True)\n"),
        "network.blocking_migration needs a method handover_downtime_ms"),
}
SETTINGS = {"an unknown setting": ["--set", "strategies.params.TopK.kk=3"],
            "a bad setting": ["--set", "strategies.params.TopK.k=0"]}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_plugin_is_an_error_naming_it_exit_2(case, tmp_path, monkeypatch, capsys):
    spec, source, why = BAD[case]
    module = spec.split(":")[0]
    if ":" not in spec:
        spec = f"{spec}:TopK"
    if source is not None:
        (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["satpage", "compare", "--sessions", "10",
                                      "--strategies", f"on-demand,{spec}",
                                      *SETTINGS.get(case, [])])
    try:
        with pytest.raises(SystemExit) as exc:
            main()
    finally:
        sys.modules.pop(module, None)
    assert exc.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"strategy plugin '{spec}'" in err and why in err, err


FAMILIES = '''
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

import pager

_NONE = np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class Rep:
    """replicate-next again: its network use and its log, nothing in sim."""

    name: ClassVar[str] = "rep-again"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[Any] = pager.EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = pager.select_all
    network: ClassVar[Any] = pager.NetworkUse(replicate_next=True)

    def params(self):
        return _NONE

    def network_log(self, trace, events):
        return pager.replicate_next_log(trace, events)


@dataclass(frozen=True)
class Mig:
    """container-migration again: a blocking handover and its downtime."""

    model: Any = field(default_factory=pager.MigrationModel.default)
    name: ClassVar[str] = "mig-again"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[Any] = pager.EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = pager.select_all
    network: ClassVar[Any] = pager.NetworkUse(blocking_migration=True)

    def params(self):
        return _NONE

    def handover_downtime_ms(self, state_bytes):
        return self.model.downtime_ms(state_bytes)


@dataclass(frozen=True)
class Multi:
    """multipath again: on-demand's page table, faults over two disjoint paths."""

    name: ClassVar[str] = "multi-again"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[Any] = pager.EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = pager.select_none
    network: ClassVar[Any] = pager.NetworkUse(fault_paths=2)

    def params(self):
        return _NONE


@dataclass(frozen=True)
class Cust:
    """custody again: on-demand's page table, relays keep copies."""

    cache_pages: int = 64
    name: ClassVar[str] = "cust-again"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[Any] = pager.EventKind.HANDOVER
    lead_ns: ClassVar[int] = 0
    select: ClassVar[Any] = pager.select_none

    @property
    def network(self):
        return pager.NetworkUse(custody_pages=self.cache_pages)

    def params(self):
        return _NONE


@dataclass(frozen=True)
class Idle:
    """idle-link again: push-ahead's rule, pushes deferred to idle links."""

    recent_visits: int = 1
    lead_ns: int = 10_000_000_000
    threshold: float = 0.5
    name: ClassVar[str] = "idle-again"
    move_on_fault: ClassVar[bool] = True
    create_on_ground: ClassVar[bool] = False
    handover_kind: ClassVar[Any] = pager.EventKind.PUSH
    select: ClassVar[Any] = pager.PushAhead.select

    @property
    def network(self):
        return pager.NetworkUse(idle_threshold=self.threshold)

    def params(self):
        return np.array([self.recent_visits], dtype=np.int64)
'''

#: (built-in, the plugin in FAMILIES that writes it again)
AGAIN = {"replicate-next": ("fam:Rep", "rep-again"),
         "container-migration": ("fam:Mig", "mig-again"),
         "multipath": ("fam:Multi", "multi-again"), "custody": ("fam:Cust", "cust-again"),
         "idle-link": ("fam:Idle", "idle-again")}


def test_a_plugin_family_priced_by_its_network_use_alone_equals_the_builtin(tmp_path,
                                                                          monkeypatch):
    """The five built-ins with a network use of their own written again outside pager
    (their NetworkUse, network_log and handover_downtime_ms only, settings as plugin
    tables): sim prices them by what they declare, so every figure equals the
    built-in's, failures, queueing and idle-link deferral included."""
    from satpage.scenario import load_scenario, shipped_scenario, with_overrides
    from satpage.simulate import run_scenario

    (tmp_path / "fam.py").write_text(FAMILIES)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        sc = with_overrides(load_scenario(shipped_scenario("default")), {
            "sessions.count": 40, "run.chunk_sessions": 20, "time.duration_s": 5400.0,
            "sessions.lifetime_mean_s": 900.0, "network.load_bins": 6,
            "network.isl_capacity_gbps": 0.2, "network.background_load": 0.6,
            "network.background_profile": "constant",
            "faults.count": 20, "faults.replicas": 2,
            "strategies.params.custody.cache_pages": 8, "strategies.params.Cust.cache_pages": 8,
            "strategies.params.idle-link.threshold": 0.3,
            "strategies.params.Idle.threshold": 0.3,
            "strategies.compare": [x for b, (spec, _) in AGAIN.items() for x in (b, spec)]})
        st = run_scenario(sc).summaries()
    finally:
        sys.modules.pop("fam", None)
    for builtin, (_, again) in AGAIN.items():
        assert st[again] == st[builtin], builtin
    assert st["replicate-next"]["replica_copies"] > 0
    assert st["multipath"]["multipath_second_paths"] > 0
    assert st["custody"]["custody_hits"] > 0
    assert st["idle-link"]["idle_deferred_pushes"] + st["idle-link"]["idle_pushes_at_handover"] > 0
    assert st["container-migration"]["handover_downtime_p50_ms"] > 0
    assert st["replicate-next"]["replication_page_hops"] > 0


def test_a_plugin_reporting_under_a_builtin_name_is_refused(tmp_path, monkeypatch):
    (tmp_path / "twin.py").write_text(TOPK.format(name="hot-k"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    from satpage.scenario import load_scenario, shipped_scenario, with_overrides
    try:
        with pytest.raises(ValueError, match="'twin:TopK' reports as 'hot-k'"):
            with_overrides(load_scenario(shipped_scenario("default")),
                           {"strategies.compare": ["hot-k", "twin:TopK"]})
    finally:
        sys.modules.pop("twin", None)


def test_every_builtin_strategy_is_in_the_registry_and_the_readme_in_one_line():
    from satpage.scenario import StrategiesSection
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert StrategiesSection().compare is pager.STRATEGY_NAMES      # one list: the registry's
    for name in pager.STRATEGY_NAMES:
        assert pager.make_strategy(name).name == name
        summary = pager.strategy_summary(name)
        assert 0 < len(f"- {name}: {summary}") <= 78        # one line of help at 80 columns
        assert f"| `{name}` | {summary} |" in readme


def test_builtin_settings_are_checked_by_their_class():
    assert pager.make_strategy("hot-k", {"k": 7}).k == 7
    assert pager.make_strategy("idle-link", {"threshold": 1}).threshold == 1.0
    with pytest.raises(pager.StrategyError, match="unknown setting 'kay'"):
        pager.make_strategy("hot-k", {"kay": 7})
    with pytest.raises(pager.StrategyError, match="k = True must be int"):
        pager.make_strategy("hot-k", {"k": True})
    with pytest.raises(pager.StrategyError, match="must not be negative"):
        pager.make_strategy("hot-k", {"k": -1})


@pytest.mark.integration
def test_the_docs_example_plugin_runs_as_written(tmp_path):
    """docs/strategies.md's worked example, copied as a user would: its file and its
    command."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "strategies.md").read_text()
    start = doc.index("```python\n# lazy.py")
    code = doc[start + len("```python\n"):doc.index("```", start + 10)]
    (tmp_path / "lazy.py").write_text(code)
    toml_start = doc.index("```toml\n# lazy.toml")
    (tmp_path / "lazy.toml").write_text(doc[toml_start + len("```toml\n"):
                                            doc.index("```", toml_start + 10)])
    r = satpage(["compare", "lazy.toml", "--sessions", "40", "--json"], cwd=tmp_path)
    st = json.loads(r.stdout)["strategies"]
    assert set(st) == {"on-demand", "lazy"}
    assert st["lazy"]["handover_transfer_bytes"] > 0
    assert st["lazy"]["fault_latency_ms"] > 0


@pytest.mark.integration
def test_help_of_every_command_wraps_at_word_ends():
    """Help is reflowed paragraphs (rich wraps them at the terminal's width): no line
    break of a docstring's source left inside a sentence."""
    import typer.main

    from satpage.cli import app

    def walk(cmd, path):
        yield path, cmd
        for name, sub in getattr(cmd, "commands", {}).items():
            yield from walk(sub, f"{path} {name}")

    for path, cmd in walk(typer.main.get_command(app), "satpage"):
        for para in (cmd.help or "").split("\n\n"):
            for line in para.split("\n")[1:]:
                assert line.startswith("- "), f"{path}: {para!r}"
    text = textwrap.dedent(
        subprocess.run([str(SATPAGE), "compare", "--help"], capture_output=True, text=True,
                       env={**os.environ, "COLUMNS": "80"}, check=True).stdout)
    for name in pager.STRATEGY_NAMES:
        assert f"- {name}: {pager.strategy_summary(name)}" in text
