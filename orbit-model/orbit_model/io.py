"""orbit_model's file formats: readers and writers (each format is described in
orbit-model/README.md and docs/population.md)."""

from orbit_model.clients_io import read_clients, read_region, write_clients
from orbit_model.ephemeris_io import (
    EPHEMERIS_FORMAT,
    EphemerisFile,
    read_ephemeris,
    write_ephemeris,
)
from orbit_model.isl import isl_test_vectors, write_isl_test_vectors
from orbit_model.tle import TleRecord, read_tle_file

__all__ = [
    "read_tle_file", "TleRecord",
    "read_region", "read_clients", "write_clients",
    "EPHEMERIS_FORMAT", "EphemerisFile", "write_ephemeris", "read_ephemeris",
    "isl_test_vectors", "write_isl_test_vectors",
]
