"""The models an engine serves, from its OpenAI `/v1/models` answer (pure: no I/O).

vLLM answers one entry per served model name (and per loaded LoRA adapter): `id` is the name its metrics
carry as `model_name`, `root` the checkpoint it loaded, `max_model_len` the longest context it accepts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

MAX_MODELS = 64  # an answer is input like any other: LoRA adapters each add an entry
MAX_TEXT = 1024


@dataclass(frozen=True, slots=True)
class ServedModel:
    model: str  # the served model name (`id`)
    root: str  # the checkpoint served ("" when the answer does not say)
    max_context_tokens: int | None  # `max_model_len`; None when absent or not a positive integer


def parse_models(raw: bytes) -> tuple[ServedModel, ...]:
    """The models of a `/v1/models` answer; () for anything that is not one (an older server's 404 page)."""
    try:
        data = json.loads(raw).get("data")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return ()
    if not isinstance(data, list):
        return ()
    out = []
    for entry in data[:MAX_MODELS]:
        if not isinstance(entry, dict):
            continue
        model, root, limit = entry.get("id"), entry.get("root"), entry.get("max_model_len")
        if not isinstance(model, str) or not model or len(model) > MAX_TEXT:
            continue
        root = root if isinstance(root, str) and len(root) <= MAX_TEXT else ""
        # bool is an int in Python: `true` is no context length
        valid = isinstance(limit, int) and not isinstance(limit, bool) and limit > 0
        out.append(ServedModel(model, root, limit if valid else None))
    return tuple(out)
