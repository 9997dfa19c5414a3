import os

from hypothesis import HealthCheck, settings


def pytest_addoption(parser):
    parser.addoption(
        "--examples",
        type=int,
        default=int(os.environ.get("COORDSPEC_EXAMPLES", "300")),
        help="Hypothesis examples per property and state machine (default 300, or $COORDSPEC_EXAMPLES)",
    )


def pytest_collection_modifyitems(items):
    # A test that uses a Spark session is a Spark test, wherever it lives.
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker("spark")


def pytest_configure(config):
    settings.register_profile(
        "coordspec",
        max_examples=config.getoption("--examples"),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    settings.load_profile("coordspec")
