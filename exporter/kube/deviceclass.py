"""DRA DeviceClasses: the resource a class's devices are counted under, from its CEL selectors.

A claim asks for devices of a class; the scheduler allocates only devices on which every selector of the
class is true. The cluster view evaluates the selectors (`cel.py`, the subset classes use in practice)
on each published device and counts, per node:

- a class whose selectors name nothing but the driver (`device.driver == "x"`, or no selector at all,
  which selects every device) under the driver's name, as whole devices (MIG partitions left out,
  `dra.py`): the name the cluster view has always used for DRA;
- any other class under the class's own name (`resource="h100"`), the devices its selectors select;
- devices that no understood class selects under their driver's name.

A class with a selector outside the subset is *not understood*: none of its devices are counted under
it, the pods whose claims ask for it are not classified, and `understood` says so (never a guess).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.kube.cel import Device, NotUnderstood, Selector, compile_selector, driver_only


@dataclass(frozen=True)
class DeviceClassRecord:
    name: str
    driver: str | None = None  # set for a class that selects by driver only (its resource is the driver)
    selectors: tuple[Selector, ...] = ()  # all must hold
    problem: str = ""  # why a selector is not understood; "" when every one is

    @property
    def understood(self) -> bool:
        return not self.problem

    @property
    def resource(self) -> str:
        """The `resource` label of its devices and of the claims that ask for it."""
        return self.driver or self.name

    def selects(self, device: Device) -> bool:
        if self.driver is not None:
            return device.driver == self.driver
        return all(s.selects(device) for s in self.selectors)


def class_record(obj: Mapping[str, Any]) -> DeviceClassRecord:
    """A DeviceClass object → its record (the reflector's transform)."""
    name = str(obj["metadata"]["name"])
    selectors: Iterable[Mapping[str, Any]] = (obj.get("spec") or {}).get("selectors") or ()
    expressions = []
    for selector in selectors:
        expression = (selector.get("cel") or {}).get("expression")
        if not isinstance(expression, str):
            return DeviceClassRecord(name, problem="a selector without a CEL expression")
        expressions.append(expression)
    drivers = {driver_only(e) for e in expressions}
    if not expressions:
        return DeviceClassRecord(name, selectors=())  # selects every device of every driver
    if len(drivers) == 1 and None not in drivers:
        return DeviceClassRecord(name, driver=drivers.pop())
    try:
        compiled = tuple(compile_selector(e) for e in expressions)
    except NotUnderstood as exc:
        return DeviceClassRecord(name, problem=str(exc))
    return DeviceClassRecord(name, selectors=compiled)


def resource_of(device_class: str, classes: Mapping[str, DeviceClassRecord]) -> str | None:
    """The resource a claim for `device_class` is counted under; None for a class not understood.

    A class the view does not know (not created yet, or deviceclasses not readable) keeps its name."""
    record = classes.get(device_class)
    if record is None:
        return device_class
    return record.resource if record.understood else None
