"""librdkafka's own consumer-group tests against `coordspec cluster up`: the peer suite.

    .venv/bin/python benchmarks/librdkafka_peer.py [--protocol classic|consumer] [--work DIR]
        [--tests 0089,0091] [--bound-s S]

A client's test suite, written by people who never saw this broker, is the strongest check
it can face. This script:

1. obtains librdkafka's source from Debian's source package (`apt-get source librdkafka`)
   through a private deb-src list and apt state under DIR: nothing on the system changes.
   `--protocol classic` takes 2.0.2 from bookworm; `--protocol consumer` (KIP-848) takes
   2.14.2 from sid, the first Debian suite with librdkafka >= 2.12, whose test runner runs
   every consumer with `group.protocol=consumer` when TEST_CONSUMER_GROUP_PROTOCOL says so;
2. builds the library and its C test runner without optional features (no SSL, SASL, zstd,
   curl), with -j2 (about 3 minutes on 2 cores);
3. picks the consumer-group tests: the numbered tests that need a broker (not TEST_F_LOCAL,
   not marked as known issues, not a `_mock` test on librdkafka's own mock cluster) whose
   source joins a group, commits or fetches offsets through the coordinator, or lists,
   describes or deletes groups;
4. starts `coordspec cluster up` (3 brokers on a real ZooKeeper) with the broker settings
   librdkafka's tests expect: its `tests/scenarios/default.json` asks for
   `num.partitions=4` and `default.replication.factor=3`, with auto-created topics
   (the trivup harness it uses sets nothing else that the project honours);
5. runs each test number alone (`TESTS=00NN test-runner -L`), bounded by --bound-s, and
   prints a table: test -> passed / failed / skipped / not applicable, its time, and the
   first failing line.

A test the client skips as a whole (the runner's own checks, or a test that runs only under
the other group protocol) is "skipped"; a passed test some of whose subtests the client
skipped says which. A test that fails only because it needs something the project does not
serve is shown as "n/a" with what it needs (NOT_SERVED below); the share passing is counted
over the rest. A failure that is a bug of that librdkafka release, fixed in a later one, or
of a test that assumes what the protocol leaves open, stays a failure and is named
(CLIENT_BUGS_*).
Rerun with --work DIR to reuse the build. Ctrl-C stops the test and the cluster.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Suite:
    """A librdkafka release from one Debian suite, and how its tests are run."""

    version: str  # librdkafka's
    revision: str  # Debian's source package revision
    dist: str  # the Debian suite that carries it
    # The Kafka version the runner assumes: it skips tests for newer brokers.
    kafka_version: str
    env: dict[str, str]  # more for the test runner's environment
    client_bugs: dict[str, tuple[str, str]]  # see CLIENT_BUGS_* below
    bound_s: float  # each test's default bound

    def sources(self) -> str:
        return (
            "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
            f"http://deb.debian.org/debian {self.dist} main\n"
        )


CONFIGURE = ("--disable-ssl", "--disable-gssapi", "--disable-sasl", "--disable-zstd")
CONFIGURE += ("--disable-lz4-ext", "--disable-curl")
# librdkafka's tests/scenarios/default.json, by Kafka's names.
BROKER_CONFIG = ("num.partitions=4", "default.replication.factor=3")

# A group test's source does one of these through the coordinator.
GROUP_USE = re.compile(
    r"subscribe\(|rd_kafka_commit\b|commitSync|commitAsync|committed\("
    r"|list_groups|ConsumerGroup|DeleteGroups"
)
# Tests that need what the project does not serve, or what the build leaves out: test ->
# (what, a pattern of the run's output that shows it). A failure whose output does not show
# it counts as a failure.
NOT_SERVED: dict[str, tuple[str, str]] = {
    "0064": (
        (
            "a librdkafka built with OpenSSL (2.14.2's last subtest makes rd_kafka_new() fail "
            "through an SSL setting; the interceptor subtests before it passed)"
        ),
        r"OpenSSL not available at build time",
    ),
    "0081": (
        (
            "the admin APIs the project does not serve (CreateTopics with replica assignments "
            "or topic configs, the ACL APIs, DescribeConfigs, AlterConfigs, DeleteRecords)"
        ),
        r"manual assignments are not supported|topic configs are not supported|UNSUPPORTED",
    ),
    "0103": (
        (
            "a transaction coordinator (FindCoordinator for transactional ids, AddPartitionsToTxn, "
            "EndTxn, TxnOffsetCommit)"
        ),
        r"no transaction coordinator",
    ),
    "0137": (
        (
            "a transaction coordinator (2.14.2's control-messages subtest makes a transactional "
            "producer; the four batch-consume subtests before it passed)"
        ),
        r"Failed to find transaction coordinator",
    ),
    "0109": ("ACLs, set with Apache Kafka's kafka-acls.sh (KAFKA_PATH)", r"KAFKA_PATH must be set"),
    "0119": ("ACLs, set with Apache Kafka's kafka-acls.sh (KAFKA_PATH)", r"KAFKA_PATH must be set"),
}
# Failures of librdkafka itself (fixed in a later release, or a test that assumes what the
# protocol leaves open): test -> (why, a pattern of the run's output). They stay failures in
# the count; the table says why.
CLIENT_BUGS_2_0_2: dict[str, tuple[str, str]] = {
    "0113": (
        (
            "librdkafka 2.0.2 hangs in rd_kafka_destroy() after a consumed topic is deleted "
            "(fixed in 2.1.0 and 2.6.1, #4724)"
        ),
        r"h_delete_topic:\d+\) timed out",
    ),
    "0137": (
        (
            "librdkafka 2.0.x batch consume returns outdated messages when a seek runs in "
            "parallel (a known issue of 2.0.0, fixed in 2.1.0)"
        ),
        r"consumed \d+ messages, expected \d+",
    ),
}
CLIENT_BUGS_2_14_2: dict[str, tuple[str, str]] = {
    "0089": (
        (
            "the log-queue subtest assumes the consumer that read first keeps the topic's only "
            "partition when the second joins; Kafka 4.0's uniform assignor gives it to the "
            "first member in its HashMap order of member ids (the project: Java string order, "
            "SA-5), so it moves for some pairs of random member ids on Apache Kafka too"
        ),
        r"did not expect message for at least",
    ),
    "0118": (
        (
            "the test takes c1 to be assigned first; when c2's join reaches the coordinator "
            "first, c2 runs the closing consumer's branch while not closing, and its commit at "
            "its current member epoch is accepted, as Kafka 4.0's "
            "ConsumerGroup.validateOffsetCommit accepts it"
        ),
        r"Expected closing consumer \S+ commit to fail, but got NO_ERROR",
    ),
}
SUITES = {
    # The cluster is ZooKeeper-era Kafka; 3.9 is the last release with ZooKeeper mode.
    "classic": Suite("2.0.2", "1", "bookworm", "3.9.0", {}, CLIENT_BUGS_2_0_2, 300),
    # KIP-848 needs librdkafka >= 2.12 (bookworm and trixie carry 2.0.2 and 2.8.0); its
    # runner gives every consumer it makes group.protocol=consumer. The project serves
    # KIP-848 as Kafka 4.0 does, the release that made it generally available. 0113 alone
    # runs for 10 minutes under it.
    "consumer": Suite(
        "2.14.2",
        "1",
        "sid",
        "4.0.0",
        {"TEST_CONSUMER_GROUP_PROTOCOL": "consumer"},
        CLIENT_BUGS_2_14_2,
        900,
    ),
}


# The runner's reason for a test of the same number that -L leaves out (a local one).
FILTERED = "Filtered due to negative test flags"


@dataclass
class Result:
    test: str
    outcome: str  # passed, failed, timeout, skipped (by the client), n/a (not served)
    seconds: float
    line: str  # the first failing line, or why skipped or not applicable


def say(line: str) -> None:
    print(line, flush=True)


def run(cmd: list[str], cwd: Path, log: Path, **kwargs) -> None:
    with log.open("w") as out:
        done = subprocess.run(
            cmd, check=False, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, **kwargs
        )
    if done.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        raise SystemExit(f"error: {' '.join(cmd)} failed in {cwd} (log {log}): {' | '.join(tail)}")


def obtain(work: Path, suite: Suite) -> Path:
    """Debian's librdkafka source, unpacked under ``work``."""
    tree = work / f"librdkafka-{suite.version}"
    if (tree / "configure").exists():
        return tree
    apt = work / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(suite.sources())
    options = [
        f"-oDir::Etc::SourceList={apt / 'sources.list'}",
        "-oDir::Etc::SourceParts=/dev/null",
        f"-oDir::State::Lists={apt / 'lists'}",
        f"-oDir::Cache={apt / 'cache'}",
    ]
    package = f"librdkafka={suite.version}-{suite.revision}"
    say(f"source: apt-get source {package} from Debian {suite.dist} (private deb-src list)")
    run(["apt-get", *options, "update"], work, work / "apt-update.log")
    run(
        ["apt-get", *options, "source", "--download-only", package],
        work,
        work / "apt-source.log",
    )
    # The tarball's top folder is named after a release or after a commit.
    tree.mkdir()
    tarball = work / f"librdkafka_{suite.version}.orig.tar.gz"
    run(["tar", "xzf", str(tarball), "--strip-components=1"], tree, work / "untar.log")
    return tree


def build(tree: Path) -> Path:
    runner = tree / "tests" / "test-runner"
    if runner.exists():
        say(f"build: reusing {runner}")
        return runner
    say("build: configure, the library and the test runner (a few minutes)")
    run(["./configure", *CONFIGURE], tree, tree / "coordspec-configure.log")
    run(["make", "-j2", "libs"], tree, tree / "coordspec-make.log")
    run(["make", "-j2", "test-runner"], tree / "tests", tree / "coordspec-make-tests.log")
    return runner


def group_tests(tree: Path) -> list[str]:
    """The numbers of the consumer-group tests (see the module's docstring)."""
    tests = tree / "tests"
    source = (tests / "test.c").read_text()
    table = source[source.index("struct test tests[] = {") :]
    table = table[: table.index("\n};")]
    files = {p.name[:4]: p for p in [*tests.glob("0*.c"), *tests.glob("0*.cpp")]}
    chosen = []
    for name, flags in re.findall(r"_TEST\(\s*(\w+)\s*,\s*([^,)]*)", table):
        number = name[:4]
        if "LOCAL" in flags or re.search(r"KNOWN_ISSUE\b", flags) or number not in files:
            continue
        if name.endswith("_mock"):  # it makes its own mock cluster, whatever its flags
            continue
        if number not in chosen and GROUP_USE.search(files[number].read_text(errors="replace")):
            chosen.append(number)
    return chosen


@contextlib.contextmanager
def cluster_up(data: Path, settings: list[str]):
    """``coordspec cluster up`` in its own process group; yields the bootstrap address."""
    cmd = [sys.executable, "-m", "coordspec.conformance.cli", "cluster", "up", "--brokers", "3"]
    cmd += ["--data", str(data)]
    for setting in settings:
        cmd += ["--broker-config", setting]
    log = data.parent / "cluster-up.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=out, text=True, start_new_session=True
        )
    try:
        deadline = time.monotonic() + 120
        bootstrap = None
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("bootstrap: "):
                bootstrap = line.split(": ", 1)[1].strip()
                break
            if time.monotonic() > deadline:
                break
        if bootstrap is None:
            raise SystemExit(f"error: coordspec cluster up did not start; see {log}")
        say(f"cluster: {' '.join(cmd[1:])}")
        say(f"cluster: bootstrap {bootstrap}")
        yield bootstrap
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def first_failure(output: str) -> str:
    """``<test> failed at <file:line:function>: <reason>``, from the runner's first failure."""
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in output.splitlines()]
    for i, line in enumerate(lines):
        if found := re.search(r'### Test "(.*)" failed at (\S+) at ', line):
            reason = lines[i + 1].strip() if i + 1 < len(lines) else ""
            return f"{found[1]} failed at {found[2]}: {reason}"[:300]
    return next((line.strip()[:300] for line in lines if "FAIL" in line), "")


def run_test(
    runner: Path, suite: Suite, number: str, conf: Path, bound_s: float, logs: Path
) -> Result:
    env = dict(os.environ, TESTS=number, RDKAFKA_TEST_CONF=str(conf), **suite.env)
    env["LD_LIBRARY_PATH"] = f"{runner.parent.parent / 'src'}:{runner.parent.parent / 'src-cpp'}"
    env["TEST_KAFKA_VERSION"] = suite.kafka_version
    started = time.monotonic()
    process = subprocess.Popen(
        [str(runner), "-L"],
        cwd=runner.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=bound_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        timed_out = True
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        raise
    seconds = time.monotonic() - started
    (logs / f"{number}.log").write_text(output)
    returncode = None if timed_out else process.returncode
    outcome, line = classify(suite, number, output, returncode, bound_s)
    return Result(number, outcome, seconds, line)


def classify(
    suite: Suite, number: str, output: str, returncode: int | None, bound_s: float
) -> tuple[str, str]:
    """The outcome of one run of the runner (``returncode`` None: stopped at ``bound_s``),
    and its line for the table."""
    output = re.sub(r"\x1b\[[0-9;]*m", "", output)
    states = re.findall(r"Test (\w+) (PASSED|FAILED|SKIPPED) =", output)
    # A subtest the client skips (one for the other group protocol, say) is not passed.
    sub_passed = re.findall(r"\[ ([^\]]+?): PASS \(", output)
    sub_skipped = re.findall(r"\[ ([^\]]+?): SKIP: ([^\]]*?)\s*\]", output)
    if returncode is None:
        outcome, line = "timeout", f"still running after {bound_s:.0f} s; " + first_failure(output)
    elif returncode == 0 and states and all(s == "SKIPPED" for _, s in states):
        skipped = re.findall(
            r"SKIPPING TEST: ([^[\n]*)|skipping[: ]+([^[\n]*)", output, re.IGNORECASE
        )
        reasons = [a or b for a, b in skipped if FILTERED not in (a or b)]
        outcome, line = "skipped", next(iter(reasons), "skipped by the runner")
    elif returncode == 0 and sub_skipped and not sub_passed:
        outcome, line = "skipped", " ".join(sub_skipped[0][1].split())
    elif returncode == 0:
        outcome, line = "passed", ""
        if sub_skipped:
            names = ", ".join(name for name, _ in sub_skipped)
            line = f"{len(sub_passed)} subtests passed; skipped by the client: {names}"
    else:
        outcome, line = "failed", first_failure(output) or f"exit status {returncode}"
    if outcome in ("failed", "timeout") and number in NOT_SERVED:
        needs, evidence = NOT_SERVED[number]
        if re.search(evidence, output):
            outcome, line = "n/a", f"needs {needs}: {line}"
    if outcome in ("failed", "timeout") and number in suite.client_bugs:
        bug, evidence = suite.client_bugs[number]
        if re.search(evidence, output):
            line = f"{bug}: {line}"
    return outcome, line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work", type=Path, help="where to build and keep logs (default: a temp dir)"
    )
    parser.add_argument(
        "--protocol",
        choices=sorted(SUITES),
        default="classic",
        help="the group protocol: classic (librdkafka 2.0.2) or consumer (KIP-848, 2.14.2)",
    )
    parser.add_argument("--tests", help="comma-separated test numbers (default: every group test)")
    parser.add_argument(
        "--bound-s",
        type=float,
        help="each test's bound (default 300, 900 with --protocol consumer)",
    )
    parser.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="more broker settings for cluster up (after the ones librdkafka's tests expect)",
    )
    args = parser.parse_args()
    # Stop cleanly on Ctrl-C or SIGTERM, also when started in the background (SIGINT ignored).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    work = (args.work or Path(tempfile.mkdtemp(prefix="librdkafka-peer-"))).resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        suite = SUITES[args.protocol]
        runner = build(obtain(work, suite))
        numbers = group_tests(runner.parent.parent)
        if args.tests:
            wanted = args.tests.split(",")
            unknown = sorted(set(wanted) - set(numbers))
            if unknown:
                raise SystemExit(f"error: --tests: not a group test: {', '.join(unknown)}")
            numbers = [n for n in numbers if n in wanted]
        say(f"tests: {len(numbers)} consumer-group tests: {' '.join(numbers)}")
        run_dir = Path(tempfile.mkdtemp(prefix="run-", dir=work))
        logs = run_dir / "logs"
        logs.mkdir()
        results: list[Result] = []
        with cluster_up(run_dir / "cluster", [*BROKER_CONFIG, *args.broker_config]) as bootstrap:
            conf = run_dir / "test.conf"
            conf.write_text(f"metadata.broker.list={bootstrap}\n")
            for number in numbers:
                bound_s = args.bound_s or suite.bound_s
                result = run_test(runner, suite, number, conf, bound_s, logs)
                results.append(result)
                say(f"  {number}  {result.outcome:8} {result.seconds:6.1f} s  {result.line}")
    except KeyboardInterrupt:
        say("stopped")
        return 130
    counted = [r for r in results if r.outcome not in ("n/a", "skipped")]
    passed = sum(r.outcome == "passed" for r in counted)
    skipped = sum(r.outcome == "skipped" for r in results)
    say("")
    say("| test | outcome | time | first failing line / why skipped or not applicable |")
    say("|---|---|---|---|")
    for r in results:
        say(f"| {r.test} | {r.outcome} | {r.seconds:.0f} s | {r.line.replace('|', '/')} |")
    share = 100 * passed / len(counted) if counted else 0.0
    say("")
    say(
        f"{passed} of {len(counted)} applicable consumer-group tests passed ({share:.0f}%) "
        f"with group.protocol={args.protocol}; {skipped} skipped by the client, "
        f"{len(results) - len(counted) - skipped} not applicable; logs in {logs}"
    )
    return 0 if passed == len(counted) else 1


if __name__ == "__main__":
    sys.exit(main())
