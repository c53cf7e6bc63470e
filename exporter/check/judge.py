"""Whether a query returns data, from whether each of its selectors does, as PromQL evaluates it (pure).

Each selector is judged by the caller: `data`, `flag` (data only with a flag or feature), `unjudged` (a name
the caller cannot judge) or `empty`. The structure decides the rest, as PromQL does:
- `a or b` is empty only when both sides are; `a and b` needs both; `a unless b` is empty when `a` is;
- arithmetic and comparisons between vectors need both sides; with a scalar side, the vector side decides;
- aggregations and functions pass emptiness through (their vector arguments must all have data); `vector()`
  and functions of scalars always have data; `absent()` / `absent_over_time()` invert;
- an `or` whose other side is constant (`or vector(0)`) hides an empty side: the query has data, a permanent
  constant, and the hiding is recorded so that it is reported.
Data means every series the query needs exists; whether label sets then join is not judged (never a guess).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from exporter.promql.parse import (
    Aggregate,
    Binary,
    Call,
    Node,
    NumberLiteral,
    Paren,
    StringLiteral,
    Unary,
    VectorSelector,
)
from exporter.promql.selectors import Selector

DATA, FLAG, UNJUDGED, EMPTY = "data", "flag", "unjudged", "empty"
_INVERT = frozenset({"absent", "absent_over_time"})
_SCALAR_RESULT = frozenset({"scalar", "time", "pi"})


@dataclass(frozen=True)
class Hidden:
    """An `or` with a constant side that hides an empty side."""

    op: Binary
    empty: Node  # the side that is empty
    constant: Node  # the side that replaces it
    causes: tuple[Selector, ...]


@dataclass(frozen=True)
class Outcome:
    state: str
    scalar: bool = False  # a scalar (or string), not a vector
    constant: bool = False  # no selector in it: the same on every release
    causes: tuple[Selector, ...] = ()  # the selectors that make it empty (or flag-gated)
    hidden: tuple[Hidden, ...] = ()


def judge(node: Node, verdict: Callable[[Selector], str]) -> Outcome:
    """The outcome of `node`, given each selector's state."""
    if isinstance(node, (NumberLiteral, StringLiteral)):
        return Outcome(DATA, scalar=True, constant=True)
    if isinstance(node, VectorSelector):
        state = verdict(node.selector)
        return Outcome(state, causes=(node.selector,) if state in (EMPTY, FLAG) else ())
    if isinstance(node, (Paren, Unary)):
        return judge(node.expr, verdict)
    if isinstance(node, Aggregate):
        return _strip_scalar(judge(node.args[-1], verdict)) if node.args else Outcome(UNJUDGED)
    if isinstance(node, Call):
        return _call(node, [judge(a, verdict) for a in node.args])
    if isinstance(node, Binary):
        return _binary(node, judge(node.lhs, verdict), judge(node.rhs, verdict))
    return Outcome(UNJUDGED)


def _call(node: Call, args: list[Outcome]) -> Outcome:
    hidden = _hidden(args)
    if node.func == "vector" or not any(not a.scalar for a in args):
        return Outcome(DATA, scalar=node.func in _SCALAR_RESULT, constant=all(a.constant for a in args), hidden=hidden)
    vectors = [a for a in args if not a.scalar]
    inner = need_all(vectors)
    if node.func in _INVERT:
        inverted = {DATA: EMPTY, EMPTY: DATA}.get(inner.state, UNJUDGED)
        return Outcome(inverted, hidden=hidden)
    if node.func in _SCALAR_RESULT:  # scalar(v) is NaN, not nothing, when v is empty
        return Outcome(DATA, scalar=True, hidden=hidden)
    return Outcome(inner.state, causes=inner.causes, hidden=hidden)


def _binary(node: Binary, lhs: Outcome, rhs: Outcome) -> Outcome:
    hidden = _hidden([lhs, rhs])
    if lhs.scalar and rhs.scalar:
        return Outcome(DATA, scalar=True, constant=lhs.constant and rhs.constant, hidden=hidden)
    if lhs.scalar or rhs.scalar:
        vector = rhs if lhs.scalar else lhs
        return Outcome(vector.state, constant=vector.constant and lhs.constant and rhs.constant,
                       causes=vector.causes, hidden=hidden)  # fmt: skip
    constant = lhs.constant and rhs.constant
    if node.op == "or":
        result = any_of([lhs, rhs])
        for empty, other, side in ((lhs, rhs, node.lhs), (rhs, lhs, node.rhs)):
            if empty.state == EMPTY and other.constant and other.state == DATA:
                hidden += (Hidden(node, side, node.rhs if side is node.lhs else node.lhs, empty.causes),)
        return Outcome(result.state, constant=constant, causes=result.causes, hidden=hidden)
    if node.op == "unless":
        return Outcome(lhs.state, constant=constant, causes=lhs.causes, hidden=hidden)
    result = need_all([lhs, rhs])
    return Outcome(result.state, constant=constant, causes=result.causes, hidden=hidden)


def need_all(outcomes: Iterable[Outcome]) -> Outcome:
    """Empty when any is; otherwise not judged when any is, flag-gated when any is, else data."""
    items = list(outcomes)
    for state in (EMPTY, UNJUDGED, FLAG):
        if any(o.state == state for o in items):
            return Outcome(state, causes=_causes(o for o in items if o.state == state))
    return Outcome(DATA)


def any_of(outcomes: Iterable[Outcome]) -> Outcome:
    """Data when any has data; otherwise not judged, flag-gated, and empty only when all are."""
    items = list(outcomes)
    for state in (DATA, UNJUDGED, FLAG):
        if any(o.state == state for o in items):
            return Outcome(state, causes=_causes(o for o in items if o.state == state))
    return Outcome(EMPTY, causes=_causes(items))


def _causes(items: Iterable[Outcome]) -> tuple[Selector, ...]:
    return tuple(dict.fromkeys(c for o in items for c in o.causes))


def _hidden(items: Iterable[Outcome]) -> tuple[Hidden, ...]:
    return tuple(h for o in items for h in o.hidden)


def _strip_scalar(outcome: Outcome) -> Outcome:
    return Outcome(outcome.state, constant=outcome.constant, causes=outcome.causes, hidden=outcome.hidden)
