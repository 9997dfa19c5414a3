"""Installs one top-level name, ``coordspec``: the repository's top folders ``reference/``,
``broker/`` and ``conformance/`` become ``coordspec.reference``, ``coordspec.broker`` and
``coordspec.conformance`` (a broker implementer's own project may well have a ``broker``)."""

from setuptools import find_packages, setup

TOP = ("reference", "broker", "conformance")

# The scenario catalog is data in a folder of its own; naming it as a package ships it. So is
# the spec: the reports name each rule by its title there.
CATALOG = "coordspec.conformance.scenarios"
SPEC = "coordspec.spec"

setup(
    packages=[
        *(f"coordspec.{name}" for name in find_packages(include=[f"{top}*" for top in TOP])),
        CATALOG,
        SPEC,
    ],
    package_dir={**{f"coordspec.{top}": top for top in TOP}, SPEC: "spec"},
)
