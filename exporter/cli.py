"""`llm-exporter`: serve | render | check | mappings | demo."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence

from exporter import __version__, config, logs


def _serve(args: argparse.Namespace) -> int:
    from exporter import roles, server, webconfig

    try:
        cfg = config.load(args.config)
        web = webconfig.load(args.web_config) if args.web_config else None
        server.parse_listen(args.listen)
        if args.max_connections < 1:
            raise ValueError("--max-connections: must be at least 1")
        collectors = roles.build(args.role, cfg, args.kubeconfig)
    except (config.ConfigError, ValueError) as exc:
        print(f"llm-exporter: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        server.serve(collectors, args.role, args.listen, stop, web, args.max_connections)
    except OSError as exc:
        print(f"llm-exporter: cannot listen on {args.listen}: {exc.strerror}", file=sys.stderr)
        return 1
    return 0


def _mappings(args: argparse.Namespace) -> int:
    from exporter.engines.table import render_table

    print(render_table(args.version, markdown=args.markdown), end="")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from exporter.demo.run import run

    return run(args)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the exporter")
    p.add_argument("--config", default=os.environ.get("LLM_EXPORTER_CONFIG"), help="YAML config file")
    p.add_argument(
        "--listen", default=os.environ.get("LLM_EXPORTER_LISTEN", config.DEFAULT_LISTEN), help="HOST:PORT to serve"
    )
    p.add_argument("--role", choices=("node", "cluster"), default=os.environ.get("LLM_EXPORTER_ROLE", "node"))
    p.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster config, then ~/.kube/config)")
    p.add_argument(
        "--web-config",
        "--web.config.file",
        dest="web_config",
        default=os.environ.get("LLM_EXPORTER_WEB_CONFIG"),
        help="exporter-toolkit web config file: TLS and basic auth for the endpoints (default: off)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=int(os.environ.get("LLM_EXPORTER_MAX_CONNECTIONS", "64")),
        help="HTTP connections served at once; more are closed and counted (default: 64)",
    )
    p.set_defaults(func=_serve)


def parser() -> argparse.ArgumentParser:
    root = argparse.ArgumentParser(prog="llm-exporter", description=__doc__)
    root.add_argument("--version", action="version", version=f"llm-exporter {__version__}")
    root.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        type=str.lower,
        default=os.environ.get("LLM_EXPORTER_LOG_LEVEL", "info"),
    )
    root.add_argument(
        "--log-format", choices=("logfmt", "json"), default=os.environ.get("LLM_EXPORTER_LOG_FORMAT", "logfmt")
    )
    sub = root.add_subparsers(dest="command", required=True)
    _add_serve(sub)

    from exporter.bundle import check, render

    p = sub.add_parser("render", help="regenerate the dashboard, alert and rule files")
    render.add_arguments(p)
    p.set_defaults(func=render.run)
    p = sub.add_parser("check", help="report dashboard, rule and KEDA queries that return nothing")
    check.add_arguments(p)
    p.set_defaults(func=check.run)

    p = sub.add_parser("mappings", help="print the vLLM → llm_* mapping per vLLM release")
    p.add_argument("--version", help="only this vLLM release (e.g. 0.9.2)")
    p.add_argument("--markdown", action="store_true", help="a Markdown table")
    p.set_defaults(func=_mappings)

    p = sub.add_parser("demo", help="a local vLLM (CPU, tiny model) + the exporter, live")
    from exporter.demo.run import add_arguments as add_demo_arguments

    add_demo_arguments(p)
    p.set_defaults(func=_demo)
    return root


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logs.configure(args.log_level, args.log_format)
    return int(args.func(args))
