import os

from hypothesis import HealthCheck, settings

# CI runs a few hundred examples per stateful test; COORDSPEC_EXAMPLES=5000 for a deeper run.
settings.register_profile(
    "coordspec",
    max_examples=int(os.environ.get("COORDSPEC_EXAMPLES", "300")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
settings.load_profile("coordspec")
