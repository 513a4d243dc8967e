"""Hypothesis profiles: `ci` (fewer examples, the default in CI), `dev` (the default), and
`thorough`; choose with HYPOTHESIS_PROFILE."""

import os

from hypothesis import HealthCheck, settings

common = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.register_profile("ci", max_examples=25, derandomize=True, **common)
settings.register_profile("dev", max_examples=50, **common)
settings.register_profile("thorough", max_examples=500, **common)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# BLAS threads cost more than they save on the tiny matrices of the tests.
import minigrad  # noqa: E402

minigrad.set_num_threads(1)
