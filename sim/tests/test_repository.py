"""Repository-wide rules (issue 18): one licence named everywhere, nothing a reader
follows points outside the repository, and each package keeps to its own model."""

import re
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_repository_is_apache_2_and_the_images_and_chart_say_so():
    text = (ROOT / "LICENSE").read_text()
    assert text.split()[:4] == ["Apache", "License", "Version", "2.0,"]
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX" in text
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^ARG LICENSES=Apache-2\.0$", dockerfile, re.M)
    assert "NOASSERTION" not in dockerfile
    chart = yaml.safe_load((ROOT / "charts" / "satpage" / "Chart.yaml").read_text())
    assert chart["annotations"]["licenses"] == "Apache-2.0"
    assert chart["annotations"]["artifacthub.io/license"] == "Apache-2.0"
    # the embedded population grid keeps its own licence and attribution
    assert "CC BY 4.0" in (ROOT / "data" / "README.md").read_text()


SIM = ROOT / "sim" / "satpage"
#: sim functions whose names look like a model but only join, hand over a file, or pick
#: which sessions a view shows
JOINS = {"routing_snapshots", "router", "sample_sessions", "session_sample"}
#: the one compiled loop sim keeps: pricing an event log on orbit_model's routes (it walks
#: them with orbit_model.kernels.route_links / disjoint_route and reads hop counts from its tables)
#: and two small loops over one trace's accesses for the stall accounting
SIM_KERNELS = {("linkmodel.py", "price_events"), ("linkmodel.py", "_first_times"),
               ("linkmodel.py", "_late_arrivals")}


def sim_modules():
    import ast

    for path in sorted(SIM.rglob("*.py")):
        if "rpc" in path.parts:          # generated gRPC stubs
            continue
        yield path, ast.parse(path.read_text(), str(path))


def test_sim_defines_no_routing_schedule_sampling_or_replay_of_its_own():
    """One implementation of each model (issue 18): geometry, routing, visibility and
    handovers live in orbit_model, workloads and replay in pager; sim only joins."""
    import ast

    assert not (SIM / "network.py").exists() and not (SIM / "replay.py").exists()
    model_name = re.compile(r"route|routing|handover_schedul|serving_schedul|session_schedul|"
                            r"schedule_kernel|zipf|elevation|visib|shortest|sampl|"
                            r"replay_kernel|^_(walk|hops|disjoint|link_id)$", re.I)
    for path, tree in sim_modules():
        rel = path.relative_to(SIM).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
                names += [a.name for a in node.names]
                for name in names:
                    assert not name.startswith(("scipy.sparse", "networkx", "sgp4",
                                                "skyfield")), f"{rel} imports {name}"
            if isinstance(node, ast.FunctionDef):
                if model_name.search(node.name) and node.name not in JOINS:
                    raise AssertionError(f"{rel} defines {node.name}: that model is "
                                         "orbit_model's or pager's")
                decorators = ast.unparse(node).split("\n", len(node.decorator_list))[:-1]
                if any("njit" in d or "numba" in d for d in decorators):
                    assert (rel, node.name) in SIM_KERNELS, \
                        f"{rel} compiles {node.name}: a kernel over satellites x clients " \
                        "or a replay belongs in orbit_model or pager"
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Tuple) \
                    and ast.unparse(node.value) in ("pred", "neighbours"):
                raise AssertionError(f"{rel} walks a predecessor or neighbour table itself: "
                                     "route with orbit_model")
            # the modules that build and price traces draw no pages themselves (chaos
            # tests may pick satellites to kill with rng.choice)
            if isinstance(node, ast.Attribute) and node.attr in ("choice", "zipf") \
                    and rel in ("workload.py", "simulate.py", "costs.py", "linkmodel.py") \
                    and not ast.unparse(node.value).startswith("pager."):
                raise AssertionError(f"{rel} draws with .{node.attr}: pages come from pager")


def test_no_package_reaches_into_another_packages_private_names():
    import ast

    for pkg_dir, others in ((SIM, ("orbit_model", "pager")),
                            (ROOT / "pager" / "pager", ("orbit_model", "satpage")),
                            (ROOT / "orbit-model" / "orbit_model", ("pager", "satpage"))):
        for path in sorted(pkg_dir.rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in others:
                    private = [a.name for a in node.names if a.name.startswith("_")]
                    assert not private, f"{path.relative_to(ROOT)} imports {private}"
                    assert not any(p.startswith("_") for p in node.module.split(".")), \
                        f"{path.relative_to(ROOT)} imports from {node.module}"
                if isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                        and not node.attr.startswith("__"):
                    base = ast.unparse(node.value)
                    assert base.split(".")[0] not in others, \
                        f"{path.relative_to(ROOT)} uses {base}.{node.attr}"


def test_each_package_api_is_its_all_and_pager_has_no_import_cycle():
    import importlib

    for name in ("orbit_model", "pager"):
        mod = importlib.import_module(name)
        assert mod.__all__ and all(hasattr(mod, n) for n in mod.__all__), name
    # paper.py (closed form, summaries) must not import the engine, even lazily
    import ast

    paper = ast.parse((ROOT / "pager" / "pager" / "paper.py").read_text())
    imported = {n.module for n in ast.walk(paper) if isinstance(n, ast.ImportFrom)}
    assert "pager.engine" not in imported


def test_every_builtin_strategy_is_a_class_in_its_family_module():
    """A built-in strategy is one class in pager.strategies.<family>; no other pager module
    defines one (the Protocol and NetworkUse stay in pager.strategy)."""
    import importlib
    import inspect
    import pkgutil

    import pager
    import pager.strategies

    families = {m.name for m in pkgutil.iter_modules(pager.strategies.__path__)}
    assert families == {"on_demand", "whole_object", "push_ahead", "replication", "ground"}
    for name, cls in pager.BUILTIN_STRATEGIES.items():
        assert cls.__module__.rpartition(".")[0] == "pager.strategies", (name, cls.__module__)
    for info in pkgutil.iter_modules(pager.__path__):
        if info.name == "strategies":
            continue
        mod = importlib.import_module(f"pager.{info.name}")
        defined = [c for _, c in inspect.getmembers(mod, inspect.isclass)
                   if c.__module__ == mod.__name__ and hasattr(c, "select")
                   and hasattr(c, "move_on_fault") and c is not pager.Strategy]
        assert not defined, f"pager.{info.name} defines strategies {defined}"


#: orbit_model's public face: the package and its three public submodules
ORBIT_MODEL_PUBLIC = {"orbit_model", "orbit_model.constants", "orbit_model.io",
                      "orbit_model.kernels"}


def test_code_outside_orbit_model_imports_only_its_facade():
    """sim, pager, the client, the benchmarks and the test-vector scripts import
    orbit_model, orbit_model.constants, .io or .kernels, never a module behind them, and
    the kernels are not in the facade's __all__ (orbit-model's own tests may look inside)."""
    import ast

    import orbit_model
    import orbit_model.kernels

    assert not set(orbit_model.__all__) & set(orbit_model.kernels.__all__)
    for folder in ("sim", "pager", "client", "bench", "services/testdata"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "build" in path.relative_to(ROOT).parts:   # wheel build copies
                continue
            tree = ast.parse(path.read_text(), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    names = [node.module or ""]
                elif isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                else:
                    continue
                for name in names:
                    if name.split(".")[0] != "orbit_model" or name in ORBIT_MODEL_PUBLIC:
                        continue
                    # bench_orbit times Skyfield on orbit_model's own time conversion
                    assert (folder, name) == ("bench", "orbit_model.timebase"), \
                        f"{path.relative_to(ROOT)} imports {name}"


@pytest.mark.integration
def test_nothing_points_to_a_design_file_outside_the_repository():
    """Code, reports and docs cite docs/design.md and docs/conventions.md, which exist."""
    import subprocess

    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    bad = [f for f in files if f.endswith((".py", ".md", ".go", ".toml", ".yaml", ".tpl"))
           and f != "sim/tests/test_repository.py"
           and "DESIGN.md" in (ROOT / f).read_text(errors="ignore")]
    assert bad == []
    assert (ROOT / "docs" / "design.md").is_file() and (ROOT / "docs" / "conventions.md").is_file()


def test_every_sim_module_imports_and_names_no_removed_module():
    """Lazy imports inside functions too: no module refers to satpage.network or
    satpage.replay, which orbit_model and pager replaced, or to satpage.rpc and
    satpage.cluster.channel, now satpage_client's (the client distribution)."""
    import importlib
    import pkgutil

    import satpage

    for info in pkgutil.walk_packages(satpage.__path__, "satpage."):
        if info.name.endswith("__main__"):
            continue
        importlib.import_module(info.name)
    for path, _ in sim_modules():
        text = path.read_text()
        assert "satpage.network" not in text and "satpage.replay" not in text, path
        assert "satpage.rpc" not in text and "satpage.cluster.channel" not in text, path
