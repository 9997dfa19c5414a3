"""``coordspec pipeline``: the trace check as a PySpark job, at any scale.

1. The driver lists the input files; one task per file reads it (gzip or not) and emits
   each line with its key (group id, run, file), session time and line number.
2. The lines are hash-partitioned by key and sorted within partitions by key, time and
   line, so each key's events are contiguous and in order; ``mapInPandas`` walks them and
   hands each key's lines to :func:`~conformance.tracecheck.replay.check_key`, the same
   function the one-machine checker calls.
3. Violations and coverage are written as Parquet (``violations/``, ``coverage/``), the
   summary as ``trace-check.md`` and ``trace-check.html``.

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
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from conformance.suite.trace import TraceError
from conformance.tracecheck import records, summary
from conformance.tracecheck.replay import Settings, Violation, check_key

ROOT = Path(__file__).resolve().parents[2]
LINE_COLUMNS = "group_id string, run string, path string, t_ms long, number long, text string"
_VIOLATION_FIELDS = [f.name for f in dataclasses.fields(Violation)]
_LIST_FIELDS = {"allowed", "context"}
_INT_FIELDS = {"api_version", "line", "t_ms"}
OUT_COLUMNS = ", ".join(
    ["row string", "cov_kind string", "cov_name string", "count long", "events long", "unchecked long"]
    + [f"{name} {'array<string>' if name in _LIST_FIELDS else 'long' if name in _INT_FIELDS else 'string'}"
       for name in _VIOLATION_FIELDS])
# Errors only. Spark's logger set explicitly to the root's level keeps pyspark (a "shell" to
# Spark) from announcing a default level of its own.
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
"""


class PipelineError(RuntimeError):
    """Something the user can fix (no Java, no PySpark, bad input); ``str()`` is one line."""


# -- on the executors ------------------------------------------------------------------


def read_file(path: str) -> Iterator[tuple]:
    for line in records.read(Path(path)):
        group_id, run, t_ms = records.quick_key(line)
        yield group_id, run, line.path, t_ms, line.number, line.text


def check_partition(batches: Iterator, settings: Settings) -> Iterator:
    """mapInPandas: rows arrive clustered by key and in order; check each key in turn."""
    import pandas as pd

    key, lines = None, []
    for batch in batches:
        out = []
        for group_id, run, path, number, text in zip(batch["group_id"], batch["run"], batch["path"], batch["number"],
                                                     batch["text"]):
            if (group_id, run, path) != key:
                if key is not None:
                    out.extend(_rows(check_key(key[0], key[1], lines, settings)))
                key, lines = (group_id, run, path), []
            lines.append(records.Line(path, int(number), text))
        if out:
            yield pd.DataFrame(out, columns=_OUT_NAMES)
    if key is not None:
        yield pd.DataFrame(_rows(check_key(key[0], key[1], lines, settings)), columns=_OUT_NAMES)


_OUT_NAMES = ["row", "cov_kind", "cov_name", "count", "events", "unchecked", *_VIOLATION_FIELDS]


def _rows(report) -> list[list]:
    blank = [None] * len(_VIOLATION_FIELDS)
    rows = [["key", None, None, None, report.events, report.unchecked, report.group_id, report.run, *blank[2:]]]
    rows += [["coverage", kind, name, count, None, None, *blank] for (kind, name), count in report.coverage.items()]
    rows += [["violation", None, None, None, None, None, *(getattr(v, f) for f in _VIOLATION_FIELDS)] for v in report.violations]
    return rows


# -- on the driver ---------------------------------------------------------------------


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    java = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    if not java or not Path(java).exists():
        raise PipelineError("no Java found (the JVM Spark needs): run ./dev to install default-jdk-headless, or set JAVA_HOME")
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
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise PipelineError("PySpark is not installed: pip install 'coordspec[pipeline]'") from None
    _java()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the executors run this interpreter, with its packages
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # spark-submit launched the JVM and chose the master
    master = master or (None if submitted else "local[*]")
    if master and master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    if "SPARK_CONF_DIR" not in os.environ:  # Spark's scripts put this directory's log4j2.properties first
        (workdir / "log4j2.properties").write_text(_LOG4J)
        os.environ["SPARK_CONF_DIR"] = str(workdir)
    builder = (SparkSession.builder.appName("coordspec trace check")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", str(out.isatty()).lower())
               .config("spark.sql.execution.arrow.pyspark.enabled", "true"))
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
    return found.group(1).strip() if found else (text.splitlines()[0] if text else type(exc).__name__)


def check_on_spark(spark, files: list[Path], settings: Settings, partitions: int | None = None):
    """The job: a DataFrame of key, coverage and violation rows (see ``_rows``)."""
    sc = spark.sparkContext
    lines = sc.parallelize([str(f) for f in files], max(1, len(files))).flatMap(read_file)
    frame = spark.createDataFrame(lines, LINE_COLUMNS, verifySchema=False)  # read_file's rows fit by construction
    partitions = partitions or 2 * sc.defaultParallelism
    return (frame.repartition(partitions, "group_id", "run", "path")
            .sortWithinPartitions("group_id", "run", "path", "t_ms", "number")
            .mapInPandas(lambda batches: check_partition(batches, settings), OUT_COLUMNS))


def run_pipeline(inputs: list[str], output: Path, master: str | None = None, settings: Settings | None = None,
                 partitions: int | None = None, out: TextIO | None = None, spark=None) -> summary.Findings:
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
    from pyspark import StorageLevel
    from pyspark.sql import functions as F

    print(f"checking {len(files)} file{'s' * (len(files) != 1)} on {spark.sparkContext.master}…", file=out, flush=True)
    rows = check_on_spark(spark, files, settings, partitions).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        totals = rows.filter("row = 'key'").agg(
            F.count(F.when(F.col("group_id") != "", 1)), F.sum("events"), F.sum("unchecked")).first()
    except _spark_errors() as exc:  # a bad line on an executor: its TraceError is in the text
        raise PipelineError(_first_line(exc)) from None
    violations = rows.filter("row = 'violation'").select(*_VIOLATION_FIELDS)
    coverage = rows.filter("row = 'coverage'").groupBy("cov_kind", "cov_name").agg(F.sum("count").alias("count"))
    coverage = coverage.withColumnRenamed("cov_kind", "kind").withColumnRenamed("cov_name", "name")
    print(f"writing {output}…", file=out, flush=True)
    try:
        violations.write.mode("overwrite").parquet(str(output / "violations"))
        coverage.write.mode("overwrite").parquet(str(output / "coverage"))
    except _spark_errors() as exc:
        raise PipelineError(f"cannot write {output}: {_first_line(exc)}") from None
    findings = summary.Findings(
        violations=[row.asDict() for row in violations.collect()],
        coverage=Counter({(r["kind"], r["name"]): r["count"] for r in coverage.collect()}),
        totals=summary.Totals(files=len(files), keys=totals[0], events=totals[1] or 0, unchecked=totals[2] or 0,
                              how=f"Spark {spark.sparkContext.master}"))
    rows.unpersist()
    findings.totals.wall_s = time.perf_counter() - started
    summary.write(findings, output)
    return findings
