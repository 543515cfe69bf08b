import numpy as np
import pytest

from pager import Trace


def two_session_trace(**overrides):
    fields = dict(
        n_pages=10,
        visit_offsets=np.array([0, 2, 3]),
        visit_satellite=np.array([5, 6, 9], dtype=np.int32),
        visit_start_ns=np.array([0, 100, 0], dtype=np.int64),
        access_offsets=np.array([0, 2, 3, 5]),
        access_page=np.array([1, 2, 1, 0, 9], dtype=np.int32),
        access_time_ns=np.array([10, 20, 110, 5, 6], dtype=np.int64),
    )
    fields.update(overrides)
    return Trace(**fields)


def test_a_trace_maps_accesses_to_visits_and_visits_to_sessions():
    trace = two_session_trace()
    assert (trace.n_sessions, trace.n_visits, trace.n_accesses) == (2, 3, 5)
    np.testing.assert_array_equal(trace.visit_session(), [0, 0, 1])
    np.testing.assert_array_equal(trace.access_visit(), [0, 0, 1, 2, 2])


def test_a_page_outside_the_session_object_is_rejected_naming_the_value():
    with pytest.raises(ValueError, match="holds 10, outside"):
        two_session_trace(access_page=np.array([1, 2, 1, 0, 10], dtype=np.int32))


def test_offsets_that_disagree_with_the_arrays_are_rejected():
    with pytest.raises(ValueError, match="visit_satellite has shape"):
        two_session_trace(visit_satellite=np.array([5, 6], dtype=np.int32))


def test_two_visits_in_a_row_at_one_satellite_are_rejected_naming_them():
    with pytest.raises(ValueError, match="session 0: visits 0 and 1 are both at satellite 5"):
        two_session_trace(visit_satellite=np.array([5, 5, 9], dtype=np.int32))
    # a session starting where the last one ended, and a session back at a satellite later
    two_session_trace(visit_satellite=np.array([5, 6, 6], dtype=np.int32))
    Trace(n_pages=3, visit_offsets=np.array([0, 3]), visit_satellite=np.array([4, 7, 4], np.int32),
          visit_start_ns=np.array([0, 10, 20], np.int64), access_offsets=np.array([0, 0, 0, 0]),
          access_page=np.zeros(0, np.int32), access_time_ns=np.zeros(0, np.int64))
