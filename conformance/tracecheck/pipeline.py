"""``coordspec pipeline``: the trace check as a PySpark job, at any scale.

1. The driver lists the input files; one task per file reads it (gzip or not) and emits
   each line as (key, (file, line number, text)), the key (group id, run) read cheaply.
2. The lines are hash-partitioned by key in Python (``RDD.partitionBy``): the JVM moves
   pickled batches without looking into them, so a line is decoded once on each side.
3. Each partition groups its lines by key and hands each key to
   :func:`~coordspec.conformance.tracecheck.replay.check_key`, the function the one-machine checker
   calls, which orders a key's events itself; the partition's findings are added up as
   that checker adds them, and the driver collects one small result per partition.
4. Violations and coverage are written as Parquet (``violations/``, ``coverage/``), the
   summary as ``trace-check.md`` and ``trace-check.html``.

A partition's lines are held in one Python worker's memory, so there are enough partitions
for each to hold about ``PARTITION_BYTES`` of trace text (and at least two per core).

The master is ``local[*]`` unless ``--master`` names another, or ``spark-submit`` started
the job (then its ``--master`` rules). On a cluster the executors get the code as a zip
(``addPyFile``) and must see the input paths (a shared file system).
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import sys
import tempfile
import time
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from coordspec.conformance.trace import records
from coordspec.conformance.trace.format import TraceError
from coordspec.conformance.tracecheck import summary
from coordspec.conformance.tracecheck.check import add
from coordspec.conformance.tracecheck.replay import Settings, Violation, check_key

ROOT = Path(__file__).resolve().parents[2]
PARTITION_BYTES = 32 << 20
GZIP_RATIO = 10  # about how much a gzipped trace grows when read
_VIOLATION_FIELDS = [f.name for f in dataclasses.fields(Violation)]
_LIST_FIELDS = {"allowed", "context"}
_INT_FIELDS = {"api_version", "line", "t_ms"}
VIOLATION_COLUMNS = ", ".join(
    f"{name} {'array<string>' if name in _LIST_FIELDS else 'long' if name in _INT_FIELDS else 'string'}"
    for name in _VIOLATION_FIELDS
)
COVERAGE_COLUMNS = "kind string, name string, count long"
# Errors only. Spark's logger set explicitly to the root's level keeps pyspark (a "shell" to
# Spark) from announcing a default level of its own.
# A task's failure (a bad line of a trace) reaches the driver as an exception, and from there
# the user as one line: the executor's own report of it (a Python and a Java stack) is noise.
_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
logger.executor.name = org.apache.spark.executor.Executor
logger.executor.level = off
logger.tasks.name = org.apache.spark.scheduler.TaskSetManager
logger.tasks.level = off
"""


class PipelineError(RuntimeError):
    """Something the user can fix (no Java, no PySpark, bad input); ``str()`` is one line."""


# -- on the executors ------------------------------------------------------------------


def key_lines(path: str) -> Iterator[tuple[tuple[str, str], records.Line]]:
    """A file's lines as (key, line); the key is read cheaply, and the line is checked in
    full when its key is replayed."""
    for line in records.read(Path(path)):
        group_id, run, _ = records.quick_key(line)
        yield (group_id, run), line


def key_partition(key: tuple[str, str]) -> int:
    """The same number for a key in every Python worker (``hash`` of a str is salted per process)."""
    return zlib.crc32("\0".join(key).encode())


def check_partition(pairs: Iterator, settings: Settings) -> Iterator[summary.Findings]:
    """All the lines of a partition's keys, grouped by key: each key checked, the partition's
    findings added up as the one-machine checker adds them."""
    keys: dict[tuple[str, str], list[records.Line]] = {}
    for key, line in pairs:
        keys.setdefault(key, []).append(line)
    findings = summary.Findings()
    while keys:
        (group_id, run), lines = keys.popitem()  # a key's lines are freed once checked
        report = check_key(group_id, run, lines, settings)
        add(findings, report)
        findings.totals.events += report.events
    yield findings


# -- on the driver ---------------------------------------------------------------------


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise PipelineError(
            "no Java found (the JVM Spark needs): run ./dev to install default-jdk-headless, or set JAVA_HOME"
        )
    return java


def _code_zip(directory: Path) -> Path:
    """The project's packages as one zip, for executors on other machines."""
    archive = directory / "coordspec.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for package in ("reference", "conformance"):
            for path in (ROOT / package).rglob("*"):
                if path.suffix in (".py", ".yaml") and "__pycache__" not in path.parts:
                    zf.write(path, path.relative_to(ROOT))
    return archive


def session(master: str | None, workdir: Path, out: TextIO):
    """A quiet SparkSession: ``master`` (default local[*]) unless spark-submit started us."""
    from pyspark.sql import SparkSession  # the pipeline extra; the command line names it

    _java()
    os.environ.setdefault(
        "PYSPARK_PYTHON", sys.executable
    )  # the executors run this interpreter, with its packages
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    submitted = (
        "PYSPARK_GATEWAY_PORT" in os.environ
    )  # spark-submit launched the JVM and chose the master
    master = master or (None if submitted else "local[*]")
    if master and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if (
        "SPARK_CONF_DIR" not in os.environ
    ):  # Spark's scripts put this directory's log4j2.properties first
        (workdir / "log4j2.properties").write_text(_LOG4J)
        os.environ["SPARK_CONF_DIR"] = str(workdir)
    builder = (
        SparkSession.builder.appName("coordspec trace check")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", str(out.isatty()).lower())
    )
    if master:
        builder = builder.master(master)
    try:
        spark = builder.getOrCreate()
    except _spark_errors() as exc:  # the JVM did not start: pyspark says why in its own words
        raise PipelineError(f"Spark did not start: {_first_line(exc)}") from None
    spark.sparkContext.setLogLevel("ERROR")
    if not spark.sparkContext.master.startswith("local"):
        spark.sparkContext.addPyFile(str(_code_zip(workdir)))
    return spark


def _spark_errors() -> tuple[type[BaseException], ...]:
    """What pyspark raises for a failed job or a JVM that did not start."""
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return PySparkException, Py4JError, RuntimeError


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    found = re.search(r"TraceError: (.+)", text)
    return (
        found.group(1).strip() if found else (text.splitlines()[0] if text else type(exc).__name__)
    )


def partitions_for(files: list[Path], parallelism: int) -> int:
    """Enough partitions that each holds about PARTITION_BYTES of trace text (a partition's
    lines are grouped in one Python worker's memory), at least two per core, and a whole
    number per core, so that no core idles through the last wave."""
    size = sum(f.stat().st_size * (GZIP_RATIO if f.name.endswith(".gz") else 1) for f in files)
    wanted = max(2 * parallelism, -(-size // PARTITION_BYTES))
    return -(-wanted // parallelism) * parallelism


def check_on_spark(
    spark, files: list[Path], settings: Settings, partitions: int | None = None
) -> summary.Findings:
    """The job: files read one task each, lines hash-partitioned by key (pickled batches the
    JVM only moves), each partition's keys checked; the partitions' findings added up."""
    sc = spark.sparkContext
    partitions = partitions or partitions_for(files, sc.defaultParallelism)
    per_partition = (
        sc.parallelize([str(f) for f in files], max(1, len(files)))
        .flatMap(key_lines)
        .partitionBy(partitions, key_partition)
        .mapPartitions(lambda pairs: check_partition(pairs, settings))
    )
    findings = summary.Findings(totals=summary.Totals(files=len(files), how=f"Spark {sc.master}"))
    for part in per_partition.collect():  # one small Findings per partition
        findings.violations.extend(part.violations)
        findings.coverage.update(part.coverage)
        for total in ("keys", "events", "unchecked"):
            setattr(
                findings.totals,
                total,
                getattr(findings.totals, total) + getattr(part.totals, total),
            )
    return findings


def run_pipeline(
    inputs: list[str],
    output: Path,
    master: str | None = None,
    settings: Settings | None = None,
    partitions: int | None = None,
    out: TextIO | None = None,
    spark=None,
) -> summary.Findings:
    """Check the inputs on Spark and write the results under ``output``; raises PipelineError.
    With ``spark`` (a session) the job runs there and the session stays up."""
    out = out or sys.stderr
    started = time.perf_counter()
    try:
        files = records.expand(inputs)
    except TraceError as exc:
        raise PipelineError(str(exc)) from None
    settings = settings or Settings()
    if spark is not None:
        return _job(spark, files, output, settings, partitions, out, started)
    with tempfile.TemporaryDirectory(prefix="coordspec-spark-") as tmp:
        print(f"starting Spark ({master or 'local[*]'})…", file=out, flush=True)
        spark = session(master, Path(tmp), out)
        try:
            return _job(spark, files, output, settings, partitions, out, started)
        finally:
            spark.stop()


def _job(spark, files, output, settings, partitions, out, started) -> summary.Findings:
    print(
        f"checking {len(files)} file{'s' * (len(files) != 1)} on {spark.sparkContext.master}…",
        file=out,
        flush=True,
    )
    try:
        findings = check_on_spark(spark, files, settings, partitions)
    except _spark_errors() as exc:  # a bad line on an executor: its TraceError is in the text
        raise PipelineError(_first_line(exc)) from None
    print(f"writing {output}…", file=out, flush=True)
    violations = [[v[name] for name in _VIOLATION_FIELDS] for v in findings.violations]
    coverage = [[kind, name, count] for (kind, name), count in findings.coverage.items()]
    try:
        spark.createDataFrame(violations, VIOLATION_COLUMNS).coalesce(1).write.mode(
            "overwrite"
        ).parquet(str(output / "violations"))
        spark.createDataFrame(coverage, COVERAGE_COLUMNS).coalesce(1).write.mode(
            "overwrite"
        ).parquet(str(output / "coverage"))
    except _spark_errors() as exc:
        raise PipelineError(f"cannot write {output}: {_first_line(exc)}") from None
    findings.totals.wall_s = time.perf_counter() - started
    summary.write(findings, output)
    return findings
