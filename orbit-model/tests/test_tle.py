"""TLE reading: checksums against sgp4's own, and errors that name the file and line."""

from pathlib import Path

import pytest
from sgp4.io import compute_checksum

from orbit_model import Constellation
from orbit_model.io import read_tle_file
from orbit_model.tle import parse_tle_lines, tle_checksum

# The ISS element set printed in Skyfield's documentation (earth-satellites.rst).
ISS = [
    "ISS (ZARYA)",
    "1 25544U 98067A   14020.93268519  .00009878  00000-0  18200-3 0  5082",
    "2 25544  51.6498 109.4756 0003572  55.9686 274.8005 15.49815350868473",
]
SHARED_TLE = Path(__file__).resolve().parents[3] / "shared/data/tle/starlink-2022-09-14.tle"


def test_checksum_agrees_with_sgp4_for_both_lines():
    for line in ISS[1:]:
        assert tle_checksum(line) == int(compute_checksum(line)) == int(line[68])


def test_three_line_and_two_line_files_give_the_same_elements(tmp_path):
    three = tmp_path / "iss.tle"
    three.write_text("\n".join(ISS) + "\n")
    two = tmp_path / "iss2.tle"
    two.write_text("\n".join(ISS[1:]) + "\n\n")
    (a,), (b,) = read_tle_file(three), read_tle_file(two)
    assert a.name == "ISS (ZARYA)" and b.name == ""
    assert (a.line1, a.line2) == (b.line1, b.line2)
    assert a.line_number == 2 and b.line_number == 1


def test_a_bad_checksum_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.tle"
    path.write_text("\n".join([ISS[0], ISS[1], ISS[2][:-1] + "4"]) + "\n")
    with pytest.raises(ValueError, match=r"bad\.tle line 3: bad checksum"):
        read_tle_file(path)


def test_shifted_columns_name_the_file_and_line(tmp_path):
    path = tmp_path / "shifted.tle"
    shifted = "1 25544U 98067A  14020.93268519  .00009878  00000-0  18200-3 0  50822"
    path.write_text("\n".join([ISS[0], shifted, ISS[2]]) + "\n")
    with pytest.raises(ValueError, match=r"shifted\.tle line 2: TLE line 1 does not have the TLE column"):
        read_tle_file(path)


def test_a_short_line_names_its_column_count():
    with pytest.raises(ValueError, match="f line 2: TLE line 1 has 68 columns"):
        parse_tle_lines([ISS[0], ISS[1][:68], ISS[2]], source="f")


def test_line_2_without_line_1_is_an_error():
    with pytest.raises(ValueError, match="f line 2: TLE line 2 without a line 1"):
        parse_tle_lines([ISS[0], ISS[2]], source="f")


def test_line_1_without_line_2_is_an_error():
    with pytest.raises(ValueError, match="f line 2: TLE line 1 without a line 2"):
        parse_tle_lines([ISS[0], ISS[1], "NEXT SAT", ISS[1], ISS[2]], source="f")


def test_mismatched_catalogue_numbers_are_an_error():
    line2 = ISS[2].replace("25544", "25545", 1)
    line2 = line2[:68] + str(tle_checksum(line2))
    with pytest.raises(ValueError, match="catalogue number"):
        parse_tle_lines([ISS[1], line2], source="f")


def test_an_empty_file_is_an_error(tmp_path):
    path = tmp_path / "empty.tle"
    path.write_text("\n")
    with pytest.raises(ValueError, match="empty.tle: no TLE element sets"):
        read_tle_file(path)


@pytest.mark.needs_shared
def test_the_starlink_catalogue_reads_completely():
    if not SHARED_TLE.exists():
        pytest.skip(f"{SHARED_TLE} is absent (../shared/data is optional)")
    records = read_tle_file(SHARED_TLE)
    assert len(records) == 3023  # ../shared/data/README.md
    constellation = Constellation.from_tle_file(SHARED_TLE, epoch="2022-09-14T00:00:00Z")
    assert constellation.n_satellites == 3023
    # the two big shells (53.0 and 53.2 deg) come out as separate shells with many planes
    big = sorted(constellation.shells, key=lambda s: -s.n_satellites)[:2]
    assert sorted(s.inclination_deg for s in big) == pytest.approx([53.05, 53.22], abs=0.05)
    assert all(s.n_planes >= 40 and s.wraps for s in big)
