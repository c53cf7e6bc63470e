"""`check --against ENGINE==VERSION`: each query judged from the release tables alone, no Prometheus (pure).

A selector of an engine's name is *data* when that release writes the sample by default, *flag* when only a
flag or feature shows it (reported, not failed), *empty* otherwise (with why, from `names`, and the successor
for `--fix`); a name no engine's table owns (kube-state-metrics, DCGM, recording rules, the router's own) is
*not judged*, as is an engine given no `--against`, and a name with an engine's prefix that another producer
writes (`names.OTHER_PRODUCERS`: production-stack's router writes `vllm:current_qps`). Any other name with an
engine's prefix that no release of it ever wrote is *empty on every release*, with the look-alikes it has. A
name another producer re-exports under its own prefix (`producers`: Ray Serve LLM's `ray_vllm_*`) is judged as the
engine's sample on the engine's release, spelled as that producer writes it there. The query's verdict follows
from its structure (`judge`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from exporter.check import names, opencost
from exporter.check.evaluate import ALLOW_EMPTY, Result, anchored_name, hidden_reason, scale_from_zero_reason
from exporter.check.inputs import Query
from exporter.check.judge import DATA, EMPTY, FLAG, UNJUDGED, judge
from exporter.check.producers import ReExport, re_export
from exporter.check.tables import ALIASES, EngineTable, display_name, owner, tables
from exporter.engines.trtllm import NEVER_FINAL as TRTLLM_NEVER_FINAL
from exporter.promql.parse import parse
from exporter.promql.selectors import Selector, rename, selectors
from exporter.promql.tokens import PromQLSyntaxError

NATIVE = "native-histogram-bucket"
MEANING = "meaning-changed"
NOT_JUDGED = "engine-name-not-judged"
OPENCOST = "opencost-input"  # OpenCost's cost names, judged by the vLLM families they are computed from
NEVER_FINAL = {"trtllm": TRTLLM_NEVER_FINAL}  # versions published only as pre-releases, per engine


class TargetError(ValueError):
    """An `--against`/`--from` that names no engine or release the tables know; the message says which exist."""


@dataclass(frozen=True)
class Target:
    table: EngineTable
    version: str

    def __str__(self) -> str:
        return f"{self.table.engine}=={self.version}"


def parse_target(text: str) -> Target:
    engine, sep, version = text.partition("==")
    known = tables()
    if not sep or not engine or not version:
        raise TargetError(f"{text!r}: expected ENGINE==VERSION, e.g. vllm==0.33.0")
    token = engine.strip().lower()
    table = known.get(ALIASES.get(token, token))
    if table is None:
        raise TargetError(f"{text!r}: no engine {engine!r}; the tables know {', '.join(sorted(known))}")
    release = table.release(version.strip())
    if release is None:
        never = NEVER_FINAL.get(table.engine, {}).get(version.strip().removeprefix("v"))
        pre = [r for r in table.releases if r not in table.finals]
        raise TargetError(
            f"{text!r}: {table.label} {version} "
            + (f"was never released final: {never};" if never else "is not in the release tables")
            + f" ({table.finals[0]} to {table.finals[-1]}"
            + (f"; pre-releases when named: {', '.join(pre)})" if pre else ")")
        )
    return Target(table, release)


@dataclass(frozen=True)
class Verdict:
    state: str  # data, flag, unjudged, empty
    reason: str = ""
    rule: str = ""
    replacement: str | None = None


class OfflineChecker:
    def __init__(
        self,
        targets: Iterable[Target],
        converting: Sequence[str] = (),
        recorded: Iterable[str] = (),
        since: Iterable[Target] = (),
    ) -> None:
        self.targets: Mapping[str, Target] = {t.table.engine: t for t in targets}
        self.since: Mapping[str, Target] = {t.table.engine: t for t in since}  # --from: the release upgraded from
        self.converting = tuple(converting)  # where the scrape stores classic histograms as native ones
        self.recorded = frozenset(recorded)  # names the given rule files record: theirs, not the engine's

    def describe(self) -> str:
        return ", ".join(f"{t.table.label} {t.version}" for t in self.targets.values())

    def verdict(self, sel: Selector) -> Verdict:
        name = sel.name or anchored_name(sel)
        if name in self.recorded:
            return Verdict(UNJUDGED, f"{name}: not judged: a recording rule of the files checked")
        if name and (exported := re_export(name)) is not None:
            return self._re_exported(sel, name, *exported)
        if name in opencost.NAMES:
            return self._opencost(sel, name)
        if not name and (searched := _searched(sel)) is not None:
            return self._search(sel, searched)
        table = (owner(name) or self._unprefixed(name)) if name else None
        if table is None:
            return Verdict(UNJUDGED, f"{name or sel}: not judged: no engine's release table owns it")
        target = self.targets.get(table.engine)
        if target is None:
            return Verdict(UNJUDGED, f"{name}: not judged: no --against for {table.label}")
        if name in target.table.exposed(target.version):
            gated = names.label_flag(target.table, sel.matchers)
            if gated is not None:
                return Verdict(FLAG, f"{sel}: {gated.text}", gated.rule)
            swapped = names.label_renamed(target.table, name, sel.matchers)
            if swapped is not None:
                return Verdict(EMPTY, f"{sel}: {swapped.text}", swapped.rule)
            stored = self._stored(target, name)
            old = names.deprecated(target.table, name, target.version)
            if stored.state == DATA and old is not None:
                return Verdict(DATA, f"{name}: {old.text}", old.rule, old.replacement)
            changed = self._changed(target, name)
            if stored.state == DATA and changed is not None:
                return Verdict(DATA, f"{name}: {changed}", MEANING)
            return stored
        found = names.explain(name, target.version, target.table)
        if found is None:  # not reached: explain answers for every name the release does not write
            return Verdict(UNJUDGED, f"{name}: not judged")
        if found.rule == "unknown" and (who := names.other_producer(target.table, name)) is not None:
            return Verdict(UNJUDGED, f"{name}: not judged: {found.text}; it is {who}'s name")
        if found.rule == "unknown":  # the engine's prefix, and no release of it ever wrote it
            return Verdict(EMPTY, f"{name}: empty on every {target.table.label} release: {found.text}", found.rule)
        state = FLAG if found.state == "flag" else EMPTY
        return Verdict(state, f"{name}: {found.text}", found.rule, found.replacement)

    def _re_exported(self, sel: Selector, name: str, export: ReExport, inner: str) -> Verdict:
        """A producer's spelling of an engine's sample (Ray Serve's `ray_vllm_*`): judged as the engine's own
        sample on the release checked against, the name and its fix spelled as the producer writes them there."""
        target = self.targets.get(export.engine)
        if target is None:
            label = display_name(export.engine)
            text = f"{name}: not judged: {export.producer}'s re-export of {label}; no --against for {label}"
            return Verdict(UNJUDGED, text)
        label, version = target.table.label, target.version
        judged = self.verdict(Selector(inner, sel.matchers))
        fix = export.written(judged.replacement, version) if judged.replacement else None
        spelled = export.written(inner, version)
        said = judged.reason.removeprefix(f"{inner}: ")  # the engine's name, said once
        if spelled == name:
            reason = f"{name} ({export.producer}'s {inner}): {said}" if said else ""
            return Verdict(judged.state, reason, judged.rule, fix)
        text = (
            f"{name}: {export.producer} writes {label} {version}'s {inner} as {spelled}: from {label} "
            f"{export.sanitized_from} on, {label}'s Ray metrics write '_' for ':' ({export.source})"
        )
        if said:
            text += f"; and {said}"
        return Verdict(EMPTY, text, "wrong-separator", fix or (spelled if judged.state != EMPTY else None))

    def _opencost(self, sel: Selector, name: str) -> Verdict:
        """OpenCost's inference cost name (`llm_*`, never this exporter's): judged by the vLLM release it reads."""
        target = self.targets.get("vllm")
        if target is None:
            text = f"{name}: not judged: a name of {opencost.PRODUCER}, computed from vLLM's: no --against for vLLM"
            return Verdict(UNJUDGED, text)
        release = f"{target.table.label} {target.version}"
        found = opencost.warnings(name, sel.matchers, target.table.exposed(target.version), release)
        return Verdict(DATA, f"{name}: " + "; ".join(found), OPENCOST) if found else Verdict(DATA)

    def _search(self, sel: Selector, pattern: re.Pattern[str]) -> Verdict:
        """A name regex (a `metrics(regex)` variable): data when a release checked against writes a name it
        matches; empty when it names an engine's prefix, every name it matches in any release is that engine's,
        and the release checked against writes none of them; not judged otherwise (anyone's names)."""
        matching = {t.engine: sorted(n for n in _names(t) if pattern.fullmatch(n)) for t in tables().values()}
        owners = [tables()[e] for e, found in matching.items() if found]
        for table in owners:
            target = self.targets.get(table.engine)
            if target is not None and any(pattern.fullmatch(n) for n in target.table.exposed(target.version)):
                return Verdict(DATA)
        if not owners:
            return Verdict(UNJUDGED, f"{sel}: not judged: it matches no engine's name")
        if len(owners) > 1 or not any(p in pattern.pattern for p in _spellings(owners[0])):
            return Verdict(UNJUDGED, f"{sel}: not judged: it may match other producers' names")
        table = owners[0]
        target = self.targets.get(table.engine)
        if target is None:
            return Verdict(UNJUDGED, f"{sel}: not judged: no --against for {table.label}")
        found = matching[table.engine]
        return Verdict(
            EMPTY,
            f"{sel}: {table.label} {target.version} writes no name it matches (other releases wrote "
            f"{', '.join(found[:3])}{', …' if len(found) > 3 else ''})",
        )

    def _changed(self, target: Target, name: str) -> str | None:
        """A meaning change of `name`'s family between the --from release and the target, or None."""
        before = self.since.get(target.table.engine)
        family = target.table.family_of(name)
        if before is None or family is None:
            return None
        return target.table.meaning_changed(family.name, before.version, target.version)

    def _unprefixed(self, name: str) -> EngineTable | None:
        """The table of an engine checked against that wrote `name` without its prefix (trtllm-serve 1.1.0 to
        1.2.1 wrote `request_success_total`, later `trtllm_request_success_total`); None for any other name.
        Only with that engine's --against: an unprefixed name is anyone's otherwise."""
        found = [t.table for t in self.targets.values() if t.table.family_of(name) is not None]
        return found[0] if len(found) == 1 else None

    def _stored(self, target: Target, name: str) -> Verdict:
        """A sample the release writes: stored as written unless the scrape converts its histogram."""
        family = target.table.family_of(name)
        if not self.converting or family is None or family.type_at(target.version) != "histogram":
            return Verdict(DATA)
        suffix = name[len(family.name) :]
        if suffix not in ("_bucket", "_sum", "_count"):
            return Verdict(DATA)
        where = "; ".join(self.converting)
        if suffix == "_bucket":
            text = (
                f"{name}: the scrape stores {family.name} as a native histogram ({where}): no _bucket series; "
                f"query {family.name} (histogram_quantile reads it as is)"
            )
            return Verdict(EMPTY, text, NATIVE, family.name)
        function = "histogram_sum" if suffix == "_sum" else "histogram_count"
        text = (
            f"{name}: the scrape stores {family.name} as a native histogram ({where}): no {suffix} series; "
            f"use {function}({family.name})"
        )
        return Verdict(EMPTY, text, NATIVE)

    def check(self, query: Query) -> Result:
        try:
            tree = parse(query.expr)
            parsed = list(dict.fromkeys(selectors(query.expr)))
        except PromQLSyntaxError as exc:
            return Result(query, "error", [f"PromQL: {exc}"])
        verdicts = {sel: self.verdict(sel) for sel in parsed}
        outcome = judge(tree, lambda sel: verdicts[sel].state)
        if query.alert:  # empty while healthy: only its selectors must exist
            states = [v.state for v in verdicts.values()]
            state = next((s for s in (EMPTY, FLAG, DATA) if s in states), UNJUDGED)
            causes = [s for s, v in verdicts.items() if v.state == state]
        else:
            state, causes = outcome.state, list(outcome.causes)
        reasons = [verdicts[s].reason for s in causes if verdicts[s].reason]
        rules = [verdicts[s].rule for s in causes if verdicts[s].rule]
        renames = dict(
            _rename(s.name or anchored_name(s), v)
            for s, v in verdicts.items()
            if v.replacement and (v.state == EMPTY or v.rule == "deprecated-name")
        )
        if state == DATA:  # data now, but on a name in a rename's window: say so, with the successor
            for v in verdicts.values():
                if v.state == DATA and v.rule:
                    reasons.append(v.reason)
                    rules.append(v.rule)
        for hidden in outcome.hidden:
            reasons.append(hidden_reason(query.expr, hidden, f"on {self.describe()}"))
            reasons.extend(verdicts[s].reason for s in hidden.causes if verdicts[s].reason)
            rules.append("or-constant-hides-empty")
        if query.scales_to_zero and state == DATA and all(_in_engine_pods(s, verdicts[s]) for s in parsed):
            reasons.append(scale_from_zero_reason(query))
            rules.append("scale-from-zero")
        status = {DATA: "ok", EMPTY: "empty", FLAG: "allowed", UNJUDGED: "unjudged"}[state]
        if status == "ok" and reasons:
            status = "warning"
        if status == "empty" and ALLOW_EMPTY in query.expr:
            status = "allowed"
        if status == "unjudged":
            reasons = [verdicts[s].reason for s in parsed if verdicts[s].state == UNJUDGED]
            if any(verdicts[s].state == UNJUDGED and _engine_name(s) for s in parsed):
                rules = [NOT_JUDGED]  # an engine's name the tables could not judge: --strict fails it
        fix = None
        if renames:
            fix = query.written
            for old, new in renames.items():
                fix = rename(fix, old, new)
        return Result(query, status, list(dict.fromkeys(reasons)), fix, renames, rules=list(dict.fromkeys(rules)))


def _searched(sel: Selector) -> re.Pattern[str] | None:
    """The pattern of a selector that only a `__name__` regex selects by (no name, nothing anchored), or None."""
    regexes = [m.value for m in sel.matchers if m.label == "__name__" and m.op == "=~"]
    if len(regexes) != 1:
        return None
    try:
        return re.compile(regexes[0])
    except re.error:
        return None


def _names(table: EngineTable) -> frozenset[str]:
    """Every sample name any release of `table` writes (flags and features included)."""
    return frozenset(s for f in table.families.values() for s in f.samples)


def _spellings(table: EngineTable) -> tuple[str, ...]:
    """The engine's prefixes as a regex may write them (`vllm:`, and `vllm_` for a colon)."""
    return tuple(p for prefix in table.prefixes for p in {prefix, prefix.replace(":", "_")})


def _engine_name(sel: Selector) -> bool:
    """A selector of a name with an engine's (or the router's) prefix, or an engine's name re-exported."""
    return _owner(sel.name or anchored_name(sel)) is not None


def _owner(name: str) -> EngineTable | None:
    """The table of the engine writing `name`, directly or through a producer that re-exports it (Ray Serve's
    replicas are the engine's pods)."""
    exported = re_export(name) if name else None
    return owner(exported[1] if exported else name) if name else None


def _in_engine_pods(sel: Selector, verdict: Verdict) -> bool:
    """A judged selector of series only the engine pods write (not the router's: it outlives zero replicas)."""
    table = _owner(sel.name or anchored_name(sel))
    return verdict.state != UNJUDGED and table is not None and table.in_engine_pods


def _rename(name: str, verdict: Verdict) -> tuple[str, str]:
    """The name to replace in the text and its replacement: a renamed histogram's family, so that each of its
    samples (`_bucket`, `_sum`, `_count`) follows; any other correction as the sample it names."""
    new = verdict.replacement or name
    for suffix in ("_bucket", "_sum", "_count"):
        if verdict.rule == "renamed" and name.endswith(suffix) and not new.endswith(suffix):
            return name[: -len(suffix)], new
    return name, new
