"""Every command, on hostile arguments, files and outputs, answers with exit status 0, 1 or 2 and never a
traceback.

In-process (`exporter.cli.main`, streams captured) for the many cases: a seeded generator draws each
command's flags and values from garbage strings, hostile files (empty, binary, not UTF-8, nested deeper than
the parsers recurse, scalars PyYAML cannot build, an unrendered Helm template, a folder where a file is
expected, a missing file, a name too long to look up), huge and non-finite numbers, `-` and `--`. As a
process for what only a process has: a reader that closed the pipe, an output closed from the start, a full
disk, a closed standard input. `serve` is only given arguments that stop it at once: its address is a port
already taken, so a configuration that loads ends at the bind (status 1), and a bad one before (status 2).
Every case runs in a scratch folder: `render --out ""` writes there, never into the checkout.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from exporter import cli
from exporter.demo.vllm_env import free_port
from exporter.engines import registry

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "tests" / "fixtures" / "check_corpus" / "kubeai-vllm-grafana-dashboard.json"
SEED = 20261205
EXAMPLES = 60  # per command: the whole file runs in about 25 s on two busy cores

HOSTILE_TEXT: dict[str, bytes] = {
    "empty.yaml": b"",
    "binary.yaml": bytes(range(256)),
    "latin1.json": '{"title": "caf\xe9"}'.encode("latin-1"),  # not UTF-8
    "deep.yaml": b"[" * 600,  # PyYAML spends a few frames a level: past Python's 1000 (PyYAML's time grows as n²)
    "deep.json": b"[" * 1100,  # json's one a level
    "bool.yaml": b"a: !!bool x\n",
    "stamp.yaml": b"a: !!timestamp x\n",
    "date.yaml": b"a: 2001-13-45\n",
    "digits.yaml": b"a: " + b"9" * 5000 + b"\n",
    "helm.yaml": b"{{- if .Values.enabled }}\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n{{- end }}\n",
    "list.yaml": b"- 1\n- 2\n",
    "null.json": b"null",
    "kinds.yaml": b"kind: Deployment\nspec: 3\n---\nkind: List\nitems: 7\n---\nkind: ConfigMap\ndata: [1]\n",
    "workload.yaml": b"kind: Deployment\nmetadata: {name: [1], labels: 3}\nspec: {replicas: x, template: {spec: "
    b"{containers: [{image: 5, args: 7, ports: x, resources: [1]}, 3], volumes: 4}}}\n",
    "dashboard.json": b'{"panels": [{"targets": [{"expr": 5}, "x", {"expr": "sum(("}]}], "templating": 3}',
    "rules.yaml": b"groups: [{name: g, rules: [{alert: A, expr: 'vllm:num_requests_waiting > '}, 7]}]\n",
    "web.yml": b"tls_server_config: {cert_file: nope.crt, key_file: nope.key}\nbasic_auth_users: {u: plain}\n",
    "config.yaml": b"cluster: {watchdog: {enabled: yes, prometheus: {url: 'ftp://x'}}}\ngpu: [1]\n",
}
STRINGS = ["", "-", "--", "é✓", "\udcff", "9" * 300, "1e999", "nan", "inf", "-1", "0", "{{ .Values.x }}", "a=b", "=="]
TARGETS = ["vllm==0.10.1", "vllm==9.9.9", "banana==1", "vllm", "==", "tgi==", "sglang==0.4.0"]


@dataclass(frozen=True)
class World:
    dir: Path
    files: list[str]  # hostile files and names
    prometheus: list[str]  # URLs that answer nothing or are no URL
    kubeconfigs: list[str]
    taken: str  # HOST:PORT where something already listens

    def value(self, rng: random.Random, kind: str) -> str:
        pools = {
            "file": self.files,
            "url": self.prometheus,
            "target": TARGETS,
            "string": STRINGS,
            "number": ["1e999", "nan", "inf", "-1", "0", "0.2", "99999999999999999999", "x"],
            "kubeconfig": self.kubeconfigs,
            "output": ["text", "json", "sarif", "markdown"],
            "role": ["node", "cluster"],
            "engine": list(registry.NAMES),
            "version": ["0.10.1", "9.9.9", "0.10", "v0.9.2", "0.9.2+cu128", "banana", "c2101a2e9"],
            "duration": ["5m", "7d", "0s", "-1h", "1e999h", "x"],
            "time": ["now", "2026-12-01T00:00:00Z", "yesterday", "99999-01-01T00:00:00Z"],
            "label": ["cluster", "replica", "0bad", "a-b", "__name__"],
        }
        pool = pools[kind] + (STRINGS if kind != "string" and rng.random() < 0.2 else [])
        return rng.choice(pool)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("hostile")
    for name, data in HOSTILE_TEXT.items():
        (base / name).write_bytes(data)
    (base / "folder.yaml").mkdir()
    (base / "dashboard-copy.json").write_bytes(DASHBOARD.read_bytes())  # a real one, for --fix/--write
    closed = free_port()
    (base / "kubeconfig").write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'https://127.0.0.1:{closed}', insecure-skip-tls-verify: true}}}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    files = [str(base / name) for name in [*HOSTILE_TEXT, "folder.yaml", "dashboard-copy.json", "missing.yaml"]]
    prometheus = [f"http://127.0.0.1:{closed}", "http://127.0.0.1:99999", "http://[::1", "127.0.0.1:9", "file:///"]
    kubeconfigs = [str(base / n) for n in ("bool.yaml", "deep.yaml", "helm.yaml", "binary.yaml", "folder.yaml")]
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield World(base, files, prometheus, [*kubeconfigs, "missing.yaml"], f"127.0.0.1:{taken.getsockname()[1]}")


# --------------------------------------------------------------------------------------------- generators

Flags = dict[str, str | None]  # flag -> kind of its value (None: a switch)
COMMON: Flags = {"--log.level": "string", "--help-me": None, "--": None}

CHECK: Flags = {
    "--prometheus": "url", "--against": "target", "--from": "target", "--var": "string", "--cluster-label": "label",
    "--cluster": "string", "--replica-label": "label", "--lookback": "duration", "--timeout": "number",
    "--bearer-token-file": "file", "--output": "output", "--fix": None, "--write": None, "-v": None,
}  # fmt: skip
AUDIT: Flags = {
    "-f": "file", "-n": "string", "--prometheus": "url", "--window": "duration", "--output": "output", "-v": None,
    "--timeout": "number",
}  # fmt: skip
DIAGNOSE: Flags = {
    "--prometheus": "url", "--namespace": "string", "--model": "string", "--at": "time", "--window": "duration",
    "--output": "output", "--bearer-token-file": "file", "--grafana-url": "string", "--cluster": "string",
    "--cluster-label": "label", "--replica-label": "label",
}  # fmt: skip
MAPPINGS: Flags = {"--engine": "engine", "--version": "version", "--markdown": None}
RENDER: Flags = {"--runbook-url": "string", "--cluster-label": "label"}
SERVE: Flags = {
    "--config": "file", "--web.config.file": "file", "--role": "role", "--kubeconfig": "kubeconfig",
    "--max-connections": "number", "--web.telemetry-path": "string", "--collector.gpu": None,
    "--no-collector.cluster": None, "--collector.nope": None, "--log.format": "string",
}  # fmt: skip


def draw(rng: random.Random, world: World, flags: Flags, count: int) -> list[str]:
    argv: list[str] = []
    for _ in range(count):
        roll = rng.random()  # mostly the command's own flags: a usage error ends a case before the command runs
        flag = rng.choice([*flags]) if roll < 0.9 else rng.choice([*COMMON]) if roll < 0.95 else rng.choice(STRINGS)
        kind = {**COMMON, **flags}.get(flag)
        argv += [flag] if kind is None else [flag, world.value(rng, kind)]
    return argv


def check_argv(rng: random.Random, world: World) -> list[str]:
    mode = rng.choice([["--against", world.value(rng, "target")], ["--prometheus", world.value(rng, "url")], []])
    files = [world.value(rng, "file") for _ in range(rng.randint(0, 3))]
    return ["check", *mode, *draw(rng, world, CHECK, rng.randint(0, 4)), *files]


def audit_argv(rng: random.Random, world: World) -> list[str]:
    argv = ["audit", *draw(rng, world, AUDIT, rng.randint(0, 4))]
    if "-f" not in argv:  # live: a kubeconfig that is none, or an API server that is not there, quickly
        argv += ["--kubeconfig", world.value(rng, "kubeconfig"), "--timeout", "0.2"]
    return argv


def diagnose_argv(rng: random.Random, world: World) -> list[str]:
    return ["diagnose", "--prometheus", world.value(rng, "url"), *draw(rng, world, DIAGNOSE, rng.randint(0, 4))]


def mappings_argv(rng: random.Random, world: World) -> list[str]:
    # a few real engines (each reads its own release table) among names the parser must refuse
    engine = [rng.choice(["vllm", "tgi", "llamacpp", "banana", ""])] if rng.random() < 0.5 else []
    return ["mappings", *engine, *draw(rng, world, MAPPINGS, rng.randint(0, 3))]


def render_argv(rng: random.Random, world: World) -> list[str]:
    """Never the checkout's own files: an output folder that is a file, a fresh folder or the scratch one
    (""), or --check of a root that is no repository."""
    out = rng.choice([world.value(rng, "file"), str(world.dir / f"out-{rng.randrange(10**6)}"), ""])
    target = ["--out", out] if rng.random() < 0.7 else ["--check", "--root", world.value(rng, "file")]
    return ["render", *target, *draw(rng, world, RENDER, rng.randint(0, 2))]


def serve_argv(rng: random.Random, world: World) -> list[str]:
    return ["serve", *draw(rng, world, SERVE, rng.randint(1, 4)), "--listen", world.taken]


GENERATORS: dict[str, Callable[[random.Random, World], list[str]]] = {
    "check": check_argv,
    "audit": audit_argv,
    "diagnose": diagnose_argv,
    "mappings": mappings_argv,
    "render": render_argv,
    "serve": serve_argv,
}


# ----------------------------------------------------------------------------------------------- running


@pytest.fixture
def scratch(world: World, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The scratch folder as working directory and home, no cluster configuration from the environment, and
    the signal handlers as they were (serve sets its own before it binds)."""
    monkeypatch.chdir(world.dir)
    monkeypatch.setenv("HOME", str(world.dir))
    monkeypatch.setenv("KUBECONFIG", str(world.dir / "no-kubeconfig"))
    for name in [n for n in os.environ if n.startswith(("LLM_EXPORTER_", "KUBERNETES_SERVICE"))]:
        monkeypatch.delenv(name)
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    yield
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


def in_process(argv: list[str], stdin: str = "") -> tuple[object, str]:
    """(exit status, stdout + stderr) of `llm-exporter ARGV`, or the exception that escaped it."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        saved, sys.stdin = sys.stdin, io.StringIO(stdin)
        try:
            status: object = cli.main(argv)
        except SystemExit as exc:  # argparse's usage errors and --help
            status = 0 if exc.code is None else exc.code
        except BaseException as exc:  # noqa: BLE001 - the finding itself
            status = f"{type(exc).__name__}: {exc}"
        finally:
            sys.stdin = saved
    return status, out.getvalue()


def findings(cases: list[list[str]], stdin: str = "") -> list[str]:
    found = []
    for argv in cases:
        status, said = in_process(argv, stdin)
        if status not in (0, 1, 2) or "Traceback" in said:
            found.append(f"{argv!r}: {status!r} {said[-300:]!r}")
    return found


@pytest.mark.usefixtures("scratch")
@pytest.mark.parametrize("command", list(GENERATORS))
def test_hostile_arguments_end_in_0_1_or_2_and_no_traceback(world: World, command: str) -> None:
    rng = random.Random(f"{SEED}-{command}")
    cases = [GENERATORS[command](rng, world) for _ in range(EXAMPLES)]
    found = findings(cases)
    assert not found, "\n".join(found)


@pytest.mark.usefixtures("scratch")
@pytest.mark.parametrize("name", [*HOSTILE_TEXT, "folder.yaml", "missing.yaml"])
def test_every_reader_of_a_file_answers_a_hostile_one(world: World, name: str) -> None:
    path = str(world.dir / name)
    text = (world.dir / name).read_bytes().decode("utf-8", "replace") if (world.dir / name).is_file() else ""
    readers = [
        ["check", "--against", "vllm==0.10.1", path],
        ["check", "--prometheus", world.prometheus[0], "--bearer-token-file", path, path],
        ["audit", "-f", path],
        ["audit", "--kubeconfig", path, "--timeout", "0.2"],
        ["diagnose", "--prometheus", world.prometheus[0], "--bearer-token-file", path],
        ["serve", "--config", path, "--listen", world.taken],
        ["serve", "--web.config.file", path, "--listen", world.taken],
        ["serve", "--role", "cluster", "--kubeconfig", path, "--listen", world.taken],
    ]
    found = findings(readers) + findings([["audit", "-f", "-"]], stdin=text)
    assert not found, "\n".join(found)


# ------------------------------------------------------------------------------- what only a process has

CLOSED = "llm-exporter: standard output is closed: nothing written\n"
FULL = "llm-exporter: cannot write the output: No space left on device\n"


def process(args: list[str], cwd: Path, stdout: Any = None, close: int | None = None) -> tuple[int, str]:
    """(status, stderr) of `python -m exporter ARGS` in `cwd`, with file descriptor `close` closed at start."""
    done = subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        preexec_fn=None if close is None else lambda: os.close(close),
        timeout=120,
        check=False,
    )
    return done.returncode, done.stderr


def closed_pipe(args: list[str], cwd: Path) -> tuple[int, str]:
    """(status, stderr) with standard output a pipe its reader closed before the first write (`| head`)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "exporter", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    return proc.wait(timeout=120), err


def test_closed_pipes_closed_streams_and_full_disks(world: World) -> None:
    check = ["check", "-v", "--against", "vllm==0.10.1", str(DASHBOARD)]
    audit = ["audit", "-v", "--output", "json", "-f", str(ROOT / "tests" / "fixtures" / "audit_corpus" / "lws-vllm")]
    got: dict[str, tuple[int, str]] = {}
    want: dict[str, tuple[int, str]] = {}
    for args in (check, audit, ["mappings", "--markdown"]):
        got[f"{args[0]} | head"] = closed_pipe(args, world.dir)
        got[f"{args[0]} >&-"] = process(args, world.dir, close=1)
        with open("/dev/full", "w") as full:
            got[f"{args[0]} > /dev/full"] = process(args, world.dir, stdout=full)
        want |= {f"{args[0]} | head": (1, ""), f"{args[0]} >&-": (1, CLOSED), f"{args[0]} > /dev/full": (1, FULL)}
    got["audit -f - <&-"] = process(["audit", "-f", "-"], world.dir, stdout=subprocess.DEVNULL, close=0)
    want["audit -f - <&-"] = (2, "audit: <stdin>: cannot read: standard input is closed\n")
    stdin_status, stdin_err = got.pop("audit -f - <&-")
    assert (stdin_status, want.pop("audit -f - <&-")[1] in stdin_err.splitlines(True)) == (2, True), stdin_err
    assert got == want
