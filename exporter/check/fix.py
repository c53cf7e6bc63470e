"""`--write`: rewrite the queries of a file in place, keeping everything else byte for byte (pure).

The text is edited, never re-serialised, so a dashboard's JSON keeps its formatting and a YAML file its
comments: in JSON each query string is replaced where it stands (as JSON encodes it); in YAML each query is
replaced where it stands verbatim, and a query folded over lines (a block scalar) has its renamed metric
names replaced within the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from exporter.check.evaluate import Result
from exporter.promql.selectors import rename


def rewrite(text: str, results: Iterable[Result], json_file: bool) -> str:
    """`text` (one file's content) with every fixable query of `results` replaced by its fix."""
    for result in results:
        if result.fix is None or result.fix == result.query.written:
            continue
        old, new = result.query.written, result.fix
        if json_file:
            text = text.replace(_encoded(old), _encoded(new))
        elif old in text:
            text = text.replace(old, new)
        else:
            for missing, replacement in result.renames.items():
                text = rename(text, missing, replacement)
    return text


def _encoded(expr: str) -> str:
    """`expr` as it stands inside a JSON string (non-ASCII as written, as Grafana writes it)."""
    return json.dumps(expr, ensure_ascii=False)[1:-1]
