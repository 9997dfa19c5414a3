"""``coordspec conform``: its options, and the call into the suite (conformance/suite/).

Building the parser imports nothing heavy, so ``coordspec``'s other commands start fast;
``run_command`` imports the suite. ``python -m coordspec.conformance.suite`` and the pytest
plugin use the same options and targets.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from coordspec.conformance.cli import security_options
from coordspec.conformance.cli.numbers import POSITIVE
from coordspec.conformance.cli.trace import add_broker_settings, add_timing_tolerance
from coordspec.conformance.suite.targets import TARGETS


def register(commands) -> dict[str, Callable[[argparse.Namespace], int]]:
    add_arguments(
        commands.add_parser(
            "conform",
            help="check a Kafka-protocol broker (default: the reference) against the conformance scenarios",
        )
    )
    return {"conform": run_command}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--target",
        choices=TARGETS,
        help="what to check (default: kafka with --bootstrap, else reference)",
    )
    parser.add_argument(
        "--bootstrap",
        metavar="HOST:PORT[,...]",
        help="the broker to check (kafka target): Kafka's bootstrap list, tried in order",
    )
    security_options.add_arguments(parser, "kafka target")
    parser.add_argument(
        "--on-kill-coordinator",
        metavar="CMD",
        help="kafka target: shell command that kills the group's coordinator "
        "(env COORDSPEC_GROUP_ID, COORDSPEC_COORDINATOR); scenarios that need it run one at a time",
    )
    parser.add_argument(
        "--on-restart",
        metavar="CMD",
        help="kafka target: shell command that restarts the coordinator and returns once it is back",
    )
    add_broker_settings(parser, "the broker under test")
    parser.add_argument(
        "--hook-timeout",
        type=POSITIVE,
        default=60,
        metavar="SECONDS",
        help="a fault hook that runs longer is killed with its process group, and its run is "
        "an error (default 60)",
    )
    parser.add_argument(
        "--topics",
        type=_three_names,
        metavar="FOO,BAR,BAZ",
        help="kafka target: the names of the three topics the scenarios commit offsets to "
        "(default foo,bar,baz); created with 3 partitions if missing",
    )
    parser.add_argument(
        "--delete-topics",
        action="store_true",
        help="kafka target: delete the topics the run created when it ends (the run's groups "
        "are always deleted)",
    )
    parser.add_argument(
        "--scenarios",
        nargs="+",
        type=Path,
        default=[],
        metavar="PATH",
        help="scenario files or directories (default: the bundled catalog)",
    )
    parser.add_argument(
        "--tags",
        "--select",
        dest="tags",
        nargs="+",
        default=[],
        metavar="TAG",
        help="run scenarios with a matching rule, tag or name (shell patterns: GM-5*, static); "
        "'!TAG' leaves them out ('!slow')",
    )
    parser.add_argument(
        "--versions",
        default="all",
        metavar="SEL",
        help="all (default), latest, oldest, or API=RANGE,... such as JoinGroup=4-9,SyncGroup=5",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for the reference target's open choices (default 0)",
    )
    parser.add_argument(
        "--concurrency", type=POSITIVE, default=64, help="runs at a time (default 64)"
    )
    parser.add_argument(
        "--loop",
        type=POSITIVE,
        default=1,
        metavar="N",
        help="run everything N times, to catch flaky behaviour",
    )
    parser.add_argument(
        "--allow",
        type=Path,
        metavar="FILE",
        help="tolerated divergences: reported as allowed, never hidden",
    )
    add_timing_tolerance(parser)
    parser.add_argument(
        "--fail-on",
        type=lambda text: [word.strip() for word in text.split(",") if word.strip()],
        default=None,
        metavar="SEVERITY,...",
        help="exit 1 only for divergences of these severities (wire, safety, liveness, protocol, "
        "timing, cosmetic; default all); harness errors always fail",
    )
    parser.add_argument(
        "--listen-after-failure-ms",
        type=int,
        default=None,  # the runner's LISTEN_AFTER_FAILURE_MS, not imported to keep the parser light
        metavar="MS",
        help="when a run fails because the broker left a request unanswered, keep waiting for "
        "the answer until this long after the request was sent, and report when it came "
        "(default 30000; a scenario with faults on a shared broker does not wait longer)",
    )
    parser.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML")
    parser.add_argument(
        "--report",
        type=Path,
        metavar="DIR",
        help="write conformance.md (a summary under 1 MiB), conformance-details.md, "
        "conformance.html and conformance.json",
    )
    parser.add_argument(
        "--trace",
        type=Path,
        metavar="FILE",
        help="write the JSONL trace of every request and response",
    )
    parser.add_argument(
        "--list",
        action="store_true",
        help="list the selected scenarios (their settings, tags, fault hooks) and what the "
        "catalog does not cover; run nothing",
    )


def _three_names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    if len(names) != 3 or len(set(names)) != 3 or not all(names):
        raise argparse.ArgumentTypeError(f"three distinct topic names, as foo,bar,baz: {text!r}")
    return names


def rerun_base(args: argparse.Namespace) -> str:
    """The command line that selects this run's target, scenarios and tolerances: a
    divergence's rerun command adds the one scenario and version plan to it."""
    words = ["coordspec", "conform", "--target", args.target]
    options = {
        "--bootstrap": args.bootstrap,
        "--on-kill-coordinator": args.on_kill_coordinator,
        "--on-restart": args.on_restart,
        "--hook-timeout": args.hook_timeout if args.hook_timeout != 60 else None,
        "--topics": ",".join(args.topics) if args.topics else None,
        "--allow": args.allow,
        "--broker-settings-file": args.broker_settings_file,
        "--timing-tolerance-ms": args.timing_tolerance_ms,
        "--listen-after-failure-ms": args.listen_after_failure_ms,
        "--seed": args.seed or None,
    }
    for flag, value in options.items():
        if value is not None:
            words += [flag, str(value)]
    for setting in args.broker_setting:
        words += ["--broker-setting", setting]
    if args.command_config:
        words += ["--command-config", str(args.command_config)]
    for given in args.command_property:
        key = given.partition("=")[0].strip()
        secret = key in ("sasl.password", "ssl.key.password", "sasl.jaas.config")
        words += ["--command-property", f"{key}=***" if secret else given]
    if args.scenarios:
        words += ["--scenarios", *map(str, args.scenarios)]
    return shlex.join(words)


def _error(message: str) -> int:
    for line in message.splitlines():
        print(f"coordspec conform: {line}", file=sys.stderr)
    return 2


def run_command(args: argparse.Namespace) -> int:
    from coordspec.conformance.suite import broker_settings, loader, outputs, targets
    from coordspec.conformance.suite.listing import listing
    from coordspec.conformance.suite.suite import SuiteError, run, select
    from coordspec.reference.properties import SettingsError

    args.target = args.target or ("kafka" if args.bootstrap else "reference")
    if args.list:
        try:
            print(listing(select(loader.load_all(args.scenarios), args.tags)))
        except loader.ScenarioError as exc:
            return _error(str(exc))
        return 0
    unwritable = outputs.problems(args.junit, args.report, args.trace)
    if unwritable:  # before a target starts, and long before a run would end
        return _error("\n".join(unwritable))
    faults = None
    if args.on_kill_coordinator or args.on_restart:
        from coordspec.conformance.suite.kafka_target import FaultCommands

        faults = FaultCommands(
            kill_coordinator=args.on_kill_coordinator,
            restart=args.on_restart,
            timeout_s=args.hook_timeout,
        )
    security = None
    if args.command_config or args.command_property:
        from coordspec.conformance.security import SecurityError, load

        try:
            security = load(args.command_config, args.command_property)
        except SecurityError as exc:
            print(f"coordspec conform: {exc}", file=sys.stderr)
            return 2
    try:
        # Made here rather than in run(), so that a target with a child process is stopped after the run.
        config = broker_settings.config_of(args)
        target = targets.make(
            args.target, args.bootstrap, args.seed, faults, config, security, topics=args.topics
        )
    except (targets.UnknownTarget, SettingsError) as exc:
        return _error(str(exc))
    given = {  # options left out take the suite's defaults
        name: getattr(args, name)
        for name in ("timing_tolerance_ms", "listen_after_failure_ms", "fail_on")
        if getattr(args, name) is not None
    }
    try:
        outcome = run(
            target,
            scenarios=args.scenarios,
            tags=args.tags,
            version_selection=args.versions,
            junit=args.junit,
            report=args.report,
            trace=args.trace,
            seed=args.seed,
            concurrency=args.concurrency,
            allow=args.allow,
            loop=args.loop,
            rerun=rerun_base(args),
            **given,
        )
    except SuiteError as exc:
        return _error(str(exc))
    finally:
        # A shared broker keeps nothing of the run's but the topics (--delete-topics)
        for line in getattr(target, "clean_up", lambda _: [])(args.delete_topics):
            print(line)
        getattr(target, "stop", lambda: None)()
    return outcome.exit_code
