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


# -- strategy settings: [strategies.params.NAME] for every strategy; flat keys read -------

FLAT = {"hot_k": 8, "push_recent_visits": 2, "push_lead_s": 4.5, "custody_pages": 16,
        "idle_threshold": 0.25}


def test_built_in_settings_are_params_tables_and_the_flat_keys_of_earlier_files_set_them():
    import pager
    from satpage.scenario import compared_strategies

    flat = parse_scenario({"strategies": dict(FLAT)})
    tables = parse_scenario({"strategies": {"params": {
        "hot-k": {"k": 8}, "push-ahead": {"recent_visits": 2, "lead_ns": 4_500_000_000},
        "custody": {"cache_pages": 16},
        "IdleLink": {"recent_visits": 2, "lead_ns": 4_500_000_000, "threshold": 0.25}}}})
    got = compared_strategies(flat)
    assert got == compared_strategies(tables)
    assert got["hot-k"] == pager.HotK(k=8)
    assert got["idle-link"] == pager.IdleLink(recent_visits=2, lead_ns=4_500_000_000,
                                              threshold=0.25)
    assert not set(FLAT) & set(flat.to_dict()["strategies"])    # written back as tables
    assert "strategies.hot_k" not in scenario_keys()


def test_a_flat_key_in_an_override_sets_the_setting_over_the_files_table():
    sc = load_scenario(shipped_scenario("default"))
    assert sc.strategies.params["hot-k"] == {"k": 32}
    out = with_overrides(sc, {"strategies.hot_k": 5, "strategies.push_lead_s": 2.0})
    assert out.strategies.params["hot-k"] == {"k": 5}
    assert out.strategies.params["idle-link"]["lead_ns"] == 2_000_000_000
    assert out.strategies.params["idle-link"]["threshold"] == 0.5


def test_a_setting_given_flat_and_as_a_table_is_an_error_naming_both():
    with pytest.raises(ValueError, match=r"strategies.hot_k and strategies.params.hot-k.k"):
        parse_scenario({"strategies": {"hot_k": 3, "params": {"hot-k": {"k": 4}}}})


def test_an_unknown_strategies_key_is_an_error_pointing_at_params(tmp_path):
    with pytest.raises(ValueError, match=r"unknown key strategies.'hot_kk'.*"
                                         r"\[strategies.params.NAME\]"):
        parse_scenario({"strategies": {"hot_kk": 3}})


@pytest.mark.parametrize("strategies,why", [
    ({"hot_k": -1}, "hot-k: k must not be negative, got -1"),
    ({"custody_pages": 0}, "custody: cache_pages must be at least 1, got 0"),
    ({"idle_threshold": 1.5}, "idle-link: threshold must be in (0, 1], got 1.5"),
    ({"push_lead_s": "soon"}, "strategies.push_lead_s must be a number, got 'soon'"),
    ({"compare": ["on-demand"], "params": {"custody": {"cache_pages": 0}}},
     "strategies.params.custody: strategy 'custody': custody: cache_pages must be at least 1"),
])
def test_a_bad_built_in_setting_is_an_error_quoting_it_compared_or_not(strategies, why):
    with pytest.raises(ValueError, match=re.escape(why)):
        parse_scenario({"strategies": strategies})
