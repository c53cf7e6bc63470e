"""`llm-exporter`: serve | render | check | mappings | demo | diagnose | audit."""

from __future__ import annotations

import argparse
import errno
import importlib
import importlib.util
import io
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import TextIO

from exporter import __version__, config, logs


def _serve(args: argparse.Namespace) -> int:
    from exporter import heap, roles, server, webconfig

    try:
        cfg = config.load(args.config)
        web = webconfig.load(args.web_config) if args.web_config else None
        server.parse_listen(args.listen)
        server.check_telemetry_path(args.telemetry_path)
        if args.max_connections < 1:
            raise ValueError("--max-connections: must be at least 1")
        collectors = roles.build(args.role, cfg, args.kubeconfig, args.collectors)
    except (config.ConfigError, ValueError) as exc:
        print(f"llm-exporter: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    heap.freeze_when_ready(collectors.ready, stop)  # the first lists, out of every later full GC's walk
    try:
        server.serve(
            collectors, args.role, args.listen, stop, web, args.max_connections, telemetry_path=args.telemetry_path
        )
    except OSError as exc:
        print(f"llm-exporter: cannot listen on {args.listen}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


def _mappings(args: argparse.Namespace) -> int:
    from exporter.engines.registry import NAMES
    from exporter.engines.table import UnknownReleaseError, render_table

    engine = args.engine_name or args.engine or "vllm"
    if engine not in NAMES:
        print(f"llm-exporter mappings: no engine {engine!r}; one of {', '.join(NAMES)}", file=sys.stderr)
        return 2
    if args.engine_name and args.engine and args.engine != args.engine_name:
        print(f"llm-exporter mappings: two engines given ({args.engine_name}, --engine {args.engine})", file=sys.stderr)
        return 2
    try:
        print(render_table(args.version, markdown=args.markdown, engine=engine), end="")
    except UnknownReleaseError as exc:
        print(f"llm-exporter mappings: {exc}", file=sys.stderr)
        return 2
    return 0


def _demo(args: argparse.Namespace) -> int:
    from exporter.demo.run import run

    return run(args)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the exporter")
    p.add_argument("--config", default=os.environ.get("LLM_EXPORTER_CONFIG"), help="YAML config file")
    p.add_argument(
        "--web.listen-address",
        "--listen",
        dest="listen",
        metavar="HOST:PORT",
        default=os.environ.get("LLM_EXPORTER_LISTEN", config.DEFAULT_LISTEN),
        help="HOST:PORT to serve",
    )
    p.add_argument(
        "--web.telemetry-path",
        dest="telemetry_path",
        metavar="PATH",
        default=os.environ.get("LLM_EXPORTER_TELEMETRY_PATH", "/metrics"),
        help="path under which to expose metrics (default: /metrics)",
    )
    p.add_argument("--role", choices=("node", "cluster"), default=os.environ.get("LLM_EXPORTER_ROLE", "node"))
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster config, then ~/.kube/config)")
    p.add_argument(
        "--web.config.file",
        "--web-config",
        dest="web_config",
        metavar="FILE",
        default=os.environ.get("LLM_EXPORTER_WEB_CONFIG"),
        help="exporter-toolkit web config file: TLS and basic auth for the endpoints (default: off)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=int(os.environ.get("LLM_EXPORTER_MAX_CONNECTIONS", "64")),
        help="HTTP connections served at once; more are closed and counted (default: 64)",
    )
    _add_collector_flags(p)
    _add_log_flags(p, argparse.SUPPRESS)  # after the subcommand too; when absent the top-level value stands
    p.set_defaults(func=_serve)


class _CollectorFlag(argparse.Action):
    """`--collector.<name>` / `--no-collector.<name>`: collector name -> on, the last flag of a name wins."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        name, on = self.const
        setattr(namespace, self.dest, {**getattr(namespace, self.dest), name: on})


def _add_collector_flags(p: argparse.ArgumentParser) -> None:
    """One pair per row of the collector table (exporter-toolkit's spelling), overriding its config switch."""
    from exporter.roles import TABLE

    for entry in TABLE:
        switch = entry.enabled_by or "always on"
        for on in (True, False):  # the --no- form is listed in the help of the other
            p.add_argument(
                f"--{'' if on else 'no-'}collector.{entry.name}",
                dest="collectors",
                action=_CollectorFlag,
                nargs=0,
                const=(entry.name, on),
                help=f"{entry.role} role: {entry.help} (default: {switch}; --no-collector.{entry.name}: off)"
                if on
                else argparse.SUPPRESS,
            )
    p.set_defaults(collectors={})


def _unknown_collector_flag(argv: Sequence[str]) -> str:
    """The error for a `--collector.<name>` of no collector ("" when every one names a row)."""
    from exporter.roles import check_name

    for arg in argv:
        for prefix in ("--collector.", "--no-collector."):
            if arg.startswith(prefix):
                try:
                    check_name(arg.removeprefix(prefix).split("=", 1)[0])
                except ValueError as exc:
                    return str(exc)
    return ""


def _add_log_flags(p: argparse.ArgumentParser, default: object | None = None) -> None:
    """`--log.level`/`--log.format` (exporter-toolkit's spellings) and today's `--log-level`/`--log-format`."""
    p.add_argument(
        "--log.level",
        "--log-level",
        dest="log_level",
        choices=("debug", "info", "warn", "warning", "error"),
        type=str.lower,
        default=os.environ.get("LLM_EXPORTER_LOG_LEVEL", "info") if default is None else default,
        help="only log messages of this severity or above (default: info)",
    )
    p.add_argument(
        "--log.format",
        "--log-format",
        dest="log_format",
        choices=("logfmt", "json"),
        default=os.environ.get("LLM_EXPORTER_LOG_FORMAT", "logfmt") if default is None else default,
        help="log line format (default: logfmt)",
    )


HELP = {
    "serve": "run the exporter",
    "render": "regenerate the bundle in a checkout, or write the alert files for your setup (--out)",
    "check": "report dashboard, rule and KEDA queries that return nothing, live or on a release to come",
    "mappings": "print an engine's → llm_* mapping per release (vLLM, SGLang, TGI, …)",
    "demo": "a local vLLM (CPU, tiny model) + the exporter, live",
    "diagnose": "walk a slow request's stages on Prometheus: verdicts, evidence, owner",
    "audit": "check engine workloads (live or manifests) against what makes LLM serving fail",
}

# The tooling commands whose module defines `add_arguments(parser)` and `run(args) -> int`: a new command
# is its module plus one line here and one in HELP.
TOOLS = {
    "render": "exporter.bundle.render",
    "check": "exporter.check.cli",
    "diagnose": "exporter.diagnose.cli",
    "audit": "exporter.audit.cli",
}


SOURCE_ONLY = {"demo": "exporter.demo"}  # not in the wheel (setup.py)


def _source_only(command: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        print(
            f"llm-exporter {command}: a tool of the source checkout, not part of the installed exporter; "
            f"run it from a clone of the repository (`python -m exporter {command}`)",
            file=sys.stderr,
        )
        return 2

    return run


def _add_tool(sub: argparse._SubParsersAction[argparse.ArgumentParser], command: str) -> None:
    """The arguments of a tooling command: its module is imported only when that command runs."""
    p = sub.add_parser(command, help=HELP[command])
    if command in SOURCE_ONLY and importlib.util.find_spec(SOURCE_ONLY[command]) is None:
        p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        p.set_defaults(func=_source_only(command))
    elif command in TOOLS:
        module = importlib.import_module(TOOLS[command])
        module.add_arguments(p)
        p.set_defaults(func=module.run)
    elif command == "mappings":
        from exporter.engines.registry import NAMES

        p.add_argument("engine_name", nargs="?", metavar="ENGINE", help=f"the engine: {', '.join(NAMES)} (or --engine)")
        p.add_argument("--engine", choices=NAMES, help="the engine (default: vllm)")
        p.add_argument(
            "--version", help="only this release of the engine (e.g. 0.9.2); one the table lacks is an error"
        )
        p.add_argument("--markdown", action="store_true", help="a Markdown table")
        p.set_defaults(func=_mappings)
    elif command == "demo":
        from exporter.demo.run import add_arguments as add_demo_arguments

        add_demo_arguments(p)
        p.set_defaults(func=_demo)


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser; only `command`'s own arguments are defined in full (None: every command's).

    The others are listed by name and help, so `llm-exporter --help` and `serve --help` import none of the
    tooling (bundle renderer, demo) or the optional run-time libraries those pull in.
    """
    root = argparse.ArgumentParser(prog="llm-exporter", description=__doc__)
    root.add_argument("--version", action="version", version=f"llm-exporter {__version__}")
    _add_log_flags(root)
    sub = root.add_subparsers(dest="command", required=True)
    for name, help_text in HELP.items():
        if name == "serve":
            _add_serve(sub)
        elif command is None or command == name:
            _add_tool(sub, name)
        else:
            sub.add_parser(name, help=help_text)
    return root


def _command(argv: Sequence[str]) -> str:
    """The subcommand named in `argv` ("" when none is)."""
    return next((arg for arg in argv if arg in HELP), "")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its exit status. An output that cannot take what is written ends it with status 1:
    a reader that went away (`| head`, said nothing: it has what it wanted), a full disk (said).

    1, not the shell's 141 for a SIGPIPE: the statuses stay 0 (done), 1 (done, something to act on or the
    output cut short) and 2 (bad input), and Python's recipe for a closed pipe does the same.
    """
    given = sys.stdout
    sys.stdout = _Output(_ClosedOutput() if given is None else given)  # `>&-`: every write fails
    try:
        status = _main(list(sys.argv[1:] if argv is None else argv))
        sys.stdout.flush()  # the last buffered lines may meet the closed pipe or the full disk only here
        return status
    except BrokenPipeError:
        _discard(given)  # so that the flush at exit does not fail again
        if given is None:
            print("llm-exporter: standard output is closed: nothing written", file=sys.stderr)
        return 1
    except OutputError as exc:
        _discard(given)
        print(f"llm-exporter: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return 1
    finally:
        sys.stdout = given


def _main(argv: list[str]) -> int:
    if _command(argv) == "serve" and (error := _unknown_collector_flag(argv)):
        print(f"llm-exporter: {error}", file=sys.stderr)
        return 2
    args = parser(_command(argv)).parse_args(argv)
    logs.configure(args.log_level, args.log_format)
    return int(args.func(args))


class OutputError(OSError):
    """Standard output refused what was written (a full disk, an I/O error); not a closed pipe."""


class _Output(io.TextIOBase):
    """Standard output, its write errors told apart from those of the files a command reads and writes."""

    def __init__(self, stream: TextIO | io.TextIOBase) -> None:
        super().__init__()
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror) from exc

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror) from exc

    def fileno(self) -> int:
        return self._stream.fileno()

    def isatty(self) -> bool:
        return self._stream.isatty()


class _ClosedOutput(io.TextIOBase):
    """Standard output when the process started without one: a write fails as on a closed pipe."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "standard output is closed")


def _discard(stream: TextIO | None) -> None:
    """Point the stream's file descriptor at /dev/null (Python's recipe for SIGPIPE): what is still buffered
    goes there, and the flush at exit cannot fail again."""
    try:
        fd = stream.fileno() if stream is not None else -1
    except (OSError, ValueError):  # a stream without a descriptor (captured)
        return
    if fd < 0:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
