"""Walker shells hold exactly the elements of docs/conventions.md; bad specs name the value."""

import math

import numpy as np
import pytest
from sgp4.api import WGS72, Satrec
from sgp4.exporter import export_tle

from orbit_model import Constellation
from orbit_model.tle import parse_tle_lines

EPOCH = "2022-09-14T00:00:00Z"


@pytest.mark.parametrize("spec", ["walker-star:150/10/1:500:87", "walker:60/6/2:550:53",
                                  "walker:1/1/0:1200:0", "walker:24/24/23:700:180"])
def test_walker_elements_are_the_design_formulas(spec):
    kind, numbers, alt, inc = spec.split(":")[0], spec.split(":")[1], *map(float, spec.split(":")[2:])
    total, planes, phasing = map(int, numbers.split("/"))
    per_plane = total // planes
    c = Constellation.from_spec(spec, epoch=EPOCH)
    assert c.n_satellites == total
    n_expected = math.sqrt(398600.4418 / (6378.137 + alt) ** 3) * 60.0  # rad/min
    for p in range(planes):
        for k in range(per_plane):
            i = p * per_plane + k
            s = c.satrecs[i]
            raan = (180.0 if kind == "walker-star" else 360.0) * p / planes
            mean_anomaly = (360.0 * k / per_plane + 360.0 * phasing * p / total) % 360.0
            assert (c.plane[i], c.slot[i]) == (p, k)
            assert s.ecco == 0.0 and s.argpo == 0.0 and s.bstar == 0.0
            assert math.degrees(s.inclo) == pytest.approx(inc, abs=1e-12)
            assert math.degrees(s.nodeo) == pytest.approx(raan, abs=1e-12)
            assert math.degrees(s.mo) == pytest.approx(mean_anomaly, abs=1e-12)
            assert s.no_kozai == pytest.approx(n_expected, rel=1e-14)
            assert s.jdsatepoch + s.jdsatepochF == pytest.approx(2459836.5, abs=1e-9)


@pytest.mark.parametrize(("spec", "message"), [
    ("walker:150/7/1:500:87", "T=150 is not divisible by P=7"),
    ("walker:150/10/10:500:87", "F=10 is out of range 0..9"),
    ("walker:150/10/1:120:87", "altitude 120.0 km is below 150 km"),
    ("walker-star:150/10/1:500:181", "inclination 181.0 deg is outside 0-180"),
    ("walker:150/10:500:87", "is not walker:T/P/F"),
    ("orbit:12", "is not walker:T/P/F:ALT_KM:INC_DEG, walker-star"),
])
def test_impossible_constellations_name_the_value(spec, message):
    with pytest.raises(ValueError, match=message):
        Constellation.from_spec(spec, epoch=EPOCH)


def test_a_walker_shell_needs_an_epoch():
    with pytest.raises(ValueError, match="needs a scenario epoch"):
        Constellation.from_spec("walker:6/2/1:500:50")


def test_a_bad_epoch_is_quoted():
    with pytest.raises(ValueError, match="'14/09/2022'"):
        Constellation.from_spec("walker:6/2/1:500:50", epoch="14/09/2022")


def test_several_shells_are_indexed_in_order():
    c = Constellation.from_spec("walker-star:12/3/1:500:87+walker:8/2/1:600:53", epoch=EPOCH)
    assert c.n_satellites == 20
    assert [s.first_index for s in c.shells] == [0, 12]
    assert c.shell.tolist() == [0] * 12 + [1] * 8
    assert c.plane[12:].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    assert math.degrees(c.satrecs[12].inclo) == pytest.approx(53.0)


def test_tle_grouping_recovers_the_planes_and_slots_of_a_walker_shell(tmp_path):
    """Authority: the Walker definition. Export a Walker shell as TLEs, read it back as a
    catalogue, and the grouping must find the same planes (in RAAN order) and slots."""
    walker = Constellation.from_spec("walker:60/6/1:550:53", epoch=EPOCH)
    lines = []
    for satrec in walker.satrecs:
        # export_tle needs the fields twoline2rv sets; rebuild from the exported lines
        line1, line2 = export_tle(satrec)
        lines += [line1, line2]
    path = tmp_path / "walker.tle"
    path.write_text("\n".join(lines) + "\n")
    catalogue = Constellation.from_tle_file(path, epoch=EPOCH)
    assert len(catalogue.shells) == 1
    shell = catalogue.shells[0]
    assert (shell.n_planes, shell.wraps) == (6, True)
    assert catalogue.plane.tolist() == walker.plane.tolist()
    assert catalogue.slot.tolist() == walker.slot.tolist()


def test_tle_records_that_sgp4_rejects_name_the_line():
    satrec = Satrec()
    satrec.sgp4init(WGS72, "i", 5, 26000.0, 0.0, 0.0, 0.0, 0.1, 0.0, 1.0, 0.0, 0.06, 0.0)
    line1, line2 = export_tle(satrec)
    line2 = line2[:52] + " 0.00000000" + line2[63:68]  # zero mean motion
    from orbit_model.tle import tle_checksum

    line2 = line2[:68] + str(tle_checksum(line2))
    records = parse_tle_lines([line1, line2], source="zero.tle")
    with pytest.raises(ValueError, match="zero.tle line 1: SGP4 rejects"):
        Constellation.from_tle_records(records, epoch=EPOCH)


def test_arrays_are_read_only():
    c = Constellation.from_spec("walker:6/2/1:500:50", epoch=EPOCH)
    with pytest.raises(ValueError):
        c.plane[0] = 3
    assert np.all(c.arg_latitude_deg >= 0)


def test_element_sets_far_from_the_epoch_are_reported(tmp_path, caplog):
    walker = Constellation.from_spec("walker:4/2/1:550:53", epoch=EPOCH)
    path = tmp_path / "old.tle"
    path.write_text("\n".join(line for s in walker.satrecs for line in export_tle(s)) + "\n")
    Constellation.from_tle_file(path, epoch="2022-09-20T00:00:00Z")
    assert "more than" not in caplog.text
    Constellation.from_tle_file(path, epoch="2022-10-14T00:00:00Z")
    assert "4 element sets are more than 14 days from the epoch" in caplog.text
