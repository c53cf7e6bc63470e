"""context-oversized: the engine reserves KV cache for a context the product never uses."""

from __future__ import annotations

import re

from exporter.audit.base import Check, Outcome, Subject, fail, ok, unknown
from exporter.audit.model import Surroundings
from exporter.audit.wrappers import Wrapper, wrapper
from exporter.engines.registry import ENGINES
from exporter.k8s import arguments
from exporter.k8s.workloads import Container

OVERSIZE_FACTOR = 4.0  # a limit this many times the tokens really used per request reserves cache for nothing


def context_limit(engine: str, c: Container) -> tuple[str, int] | None:
    """(the argument or variable that sets it, the limit in tokens), None when the engine's default stands."""
    known = ENGINES.get(engine)
    flags, envs = (known.context_args, known.context_env) if known is not None else ((), ())
    given = arguments.flag(arguments.words(c), flags)
    if given is not None:
        digits = re.match(r"\d+", given[1])
        if digits:
            return given[0], int(digits.group())
    variable = arguments.env_value(c, envs)
    if variable is not None and variable[1].strip().isdigit():
        return variable[0], int(variable[1])
    return None


def unknown_limit(engine: str, c: Container) -> str:
    """Why the context limit is not known, where it is set from a variable not resolved: "" otherwise."""
    known = ENGINES.get(engine)
    flags, envs = (known.context_args, known.context_env) if known is not None else ((), ())
    given = arguments.flag(arguments.words(c), flags)
    if given is not None:
        why = arguments.unknown_reason(c, given[1])
        return f"{given[0]} {given[1]}: {why}" if why else ""
    variable = arguments.env_reason(c, envs)
    return "" if variable is None else variable[1]


def _wrapped(found: Wrapper, subject: Subject) -> Outcome:
    """A wrapper's context limit: the largest of its models' (llama-swap's `llama-server` commands, the
    `max_model_len` of each model.json of Triton's vLLM backend, a NIM's NIM_MAX_MODEL_LEN)."""
    if found.note or not found.models:
        return unknown(found.note or f"{found.name}: its engine's context limit is not read")
    limits: list[tuple[int, str]] = []
    for model, words in found.models:
        given = arguments.flag(list(words), found.context_args)
        if given is None:
            setting = "/".join(found.context_args)
            return fail(f"{found.label} {model}: no {setting}: the model's full context is reserved")
        if re.fullmatch(r"\d{1,18}", given[1]) is None:  # no count of tokens has more digits
            return unknown(f"{found.label} {model}: {given[0]} {given[1]} {found.filled_in}")
        limits.append((int(given[1]), f"{found.label} {model}: {given[0]} {given[1]}"))
    limit, said = max(limits)
    used = subject.measured.context_tokens
    if used is None:
        return ok(said)
    if limit > OVERSIZE_FACTOR * used:
        return fail(f"{said}, over {OVERSIZE_FACTOR:g}× the {used:.0f} tokens used per request")
    return ok(f"{said}, used {used:.0f} per request")


def evaluate(subject: Subject, around: Surroundings) -> Outcome:
    found_wrapper = wrapper(subject.engine_container)
    if found_wrapper is not None:
        return _wrapped(found_wrapper, subject)
    engine = ENGINES.get(subject.engine)
    if engine is None and subject.engine:  # an operator's server that picks its engine itself (a NIM)
        return unknown(f"{subject.engine} chooses its engine at start-up: the audit knows no context flag for it")
    if engine is None or not engine.context_args:
        return unknown("engine not recognised from the command or image: its context flag is unknown")
    found = context_limit(subject.engine, subject.engine_container)
    if found is None:
        why = unknown_limit(subject.engine, subject.engine_container)
        if why:
            return unknown(f"context limit set from a variable not known here: {why}")
        flags = "/".join(engine.context_args)
        return fail(f"no {flags}: the engine reserves KV cache for the model's full context")
    flag, limit = found
    used = subject.measured.context_tokens
    if used is None:
        return ok(f"{flag} {limit}")
    if limit > OVERSIZE_FACTOR * used:
        return fail(f"{flag} {limit}, over {OVERSIZE_FACTOR:g}× the {used:.0f} tokens used per request")
    return ok(f"{flag} {limit}, used {used:.0f} per request")


CHECK = Check(
    id="context-oversized",
    severity="info",
    reason="Set the maximum context to what the product needs, not the model's limit: a 128K context when the "
    "longest real prompt is 6K reserves KV cache for requests that never come.",
    fix="Set the engine's context limit (vLLM --max-model-len, SGLang --context-length, TGI --max-total-tokens, "
    "llama-server --ctx-size, NIM NIM_MAX_MODEL_LEN) to the longest real prompt plus the longest answer.",
    reads=(),
    evaluate=evaluate,
    engine_agnostic=False,
)
