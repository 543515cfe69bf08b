import re
from pathlib import Path

import pytest

from satpage.scenario import (
    load_scenario,
    parse_override,
    parse_scenario,
    scenario_keys,
    shipped_scenario,
    with_overrides,
)

README = Path(__file__).resolve().parents[1] / "README.md"
SHIPPED = ("default", "paper-mimic", "large")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_scenario_loads(name):
    sc = load_scenario(shipped_scenario(name))
    assert sc.name == name
    assert len(sc.strategies.compare) >= 5


@pytest.mark.parametrize("name", SHIPPED)
def test_every_constant_in_a_shipped_scenario_names_its_source(name):
    """Each key = value line carries a comment, except lines that continue a block whose
    source is given just above (like the gateway longitude under its latitude)."""
    lines = shipped_scenario(name).read_text().splitlines()
    uncited = []
    for i, line in enumerate(lines):
        if re.match(r"^\s*[a-z_]+\s*=", line) and "#" not in line:
            prev = lines[i - 1]
            continuation = "#" in prev and re.match(r"^\s*[a-z_]+\s*=", prev)
            obvious = line.split("=")[0].strip() in ("name", "description", "start", "accesses_per_visit", "lon_deg",
                                                     "gateway_lon_deg", "processes")
            if not (continuation or obvious):
                uncited.append(line)
    assert not uncited, uncited


def test_the_default_scenario_is_the_papers_constellation_and_workload():
    sc = load_scenario(shipped_scenario("default"))
    assert sc.constellation.spec == "walker-star:150/10/1:500:87"
    assert sc.clients.placement == "population"
    assert (sc.workload.pages, sc.workload.zipf_s) == (1000, 1.0)


def test_every_scenario_key_is_documented_in_the_sim_readme():
    text = README.read_text()
    missing = [k for k in scenario_keys() if f"`{k}`" not in text]
    assert not missing, missing


def test_an_unknown_key_is_an_error_naming_the_key_and_the_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[workload]\nzipf_exponent = 1.0\n')
    with pytest.raises(ValueError, match=r"s\.toml.*workload\.'zipf_exponent'"):
        load_scenario(path)


def test_an_unknown_section_is_an_error_naming_it(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[workloads]\npages = 1\n')
    with pytest.raises(ValueError, match=r"s\.toml.*'workloads'"):
        load_scenario(path)


def test_a_mistyped_value_is_an_error_naming_key_value_and_file(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[workload]\npages = "many"\n')
    with pytest.raises(ValueError, match=r"s\.toml.*workload\.pages.*'many'"):
        load_scenario(path)


@pytest.mark.parametrize("key,value", [
    ("workload.pages", 0), ("workload.zipf_s", -1.0), ("sessions.count", -5),
    ("handover.policy", "random"), ("strategies.compare", ["proactive", "teleport"]),
    ("clients.lat_deg", 91.0), ("time.epoch", "yesterday"), ("constellation.spec", "iridium"),
])
def test_impossible_values_are_errors_quoting_the_value(key, value):
    sc = load_scenario(shipped_scenario("default"))
    with pytest.raises(ValueError, match=re.escape(str(value if not isinstance(value, list)
                                                        else value[1]))):
        with_overrides(sc, {key: value})


def test_an_integer_is_accepted_where_a_number_is_declared():
    sc = parse_scenario({"workload": {"zipf_s": 1}})
    assert sc.workload.zipf_s == 1.0 and isinstance(sc.workload.zipf_s, float)


def test_overrides_parse_toml_values_and_bare_words():
    assert parse_override("workload.zipf_s=0.8") == ("workload.zipf_s", 0.8)
    assert parse_override("sessions.count=12") == ("sessions.count", 12)
    assert parse_override("constellation.spec=walker:60/6/1:550:53") == (
        "constellation.spec", "walker:60/6/1:550:53")
    assert parse_override('strategies.compare=["on-demand"]') == (
        "strategies.compare", ["on-demand"])


def test_an_override_changes_one_key_and_keeps_the_source():
    base = load_scenario(shipped_scenario("default"))
    sc = with_overrides(base, {"workload.zipf_s": 0.5, "seed": 7})
    assert sc.workload.zipf_s == 0.5 and sc.seed == 7
    assert sc.workload.pages == base.workload.pages
    assert sc.source == base.source


def test_an_override_of_an_unknown_key_is_an_error():
    with pytest.raises(ValueError, match="workload.zipff"):
        with_overrides(load_scenario(shipped_scenario("default")), {"workload.zipff": 1})


def test_tle_and_gpw_paths_are_relative_to_the_scenario_file(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "c.tle").write_text("")
    (tmp_path / "s.toml").write_text('[constellation]\nspec = "tle:data/c.tle"\n'
                                     '[clients]\nsource = "gpw:missing.asc"\n')
    sc = load_scenario(tmp_path / "s.toml")
    assert sc.constellation.spec == f"tle:{tmp_path / 'data' / 'c.tle'}"
    assert sc.clients.source == "gpw:missing.asc"      # not there: left as given


def test_a_named_constellation_is_a_valid_spec_and_an_unknown_name_lists_the_known_ones():
    sc = load_scenario(shipped_scenario("default"))
    assert with_overrides(sc, {"constellation.spec": "starlink-gen1"}).constellation.spec == (
        "starlink-gen1")
    with pytest.raises(ValueError, match=r"starlink-gen9.*starlink-gen1"):
        with_overrides(sc, {"constellation.spec": "starlink-gen9"})
