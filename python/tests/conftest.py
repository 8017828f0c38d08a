"""Run under `weft run -n P python3 -m pytest python/tests`: every rank runs
every test in the same order, so the collectives line up.  The package is
taken from this source tree (and libweft.so from its build/) unless
WEFT_LIBRARY says otherwise."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import weft  # noqa: E402


@pytest.fixture(scope="session")
def comm():
    weft.init()
    return weft.comm_world()
