"""Installs one top-level name, ``coordspec``: the repository's top folders ``reference/``,
``broker/`` and ``conformance/`` become ``coordspec.reference``, ``coordspec.broker`` and
``coordspec.conformance`` (a broker implementer's own project may well have a ``broker``)."""

from setuptools import find_packages, setup

TOP = ("reference", "broker", "conformance")

# Data folders ship as packages of their own: the scenario catalog; the spec, whose pages
# name each rule in the reports; the TLA+ specs and their mutants, for `coordspec tla check`
# (conformance/formal/tlc.py finds them beside the code, as in the repository).
CATALOG = "coordspec.conformance.scenarios"
DATA = {"coordspec.spec": "spec", "coordspec.tla": "tla", "coordspec.tla.mutants": "tla/mutants"}

setup(
    packages=[
        *(f"coordspec.{name}" for name in find_packages(include=[f"{top}*" for top in TOP])),
        CATALOG,
        *DATA,
    ],
    package_dir={**{f"coordspec.{top}": top for top in TOP}, **DATA},
)
