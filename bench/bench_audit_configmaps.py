"""What the live audit holds of a cluster's ConfigMaps: the records its transform keeps, against the objects.

    .venv/bin/python bench/bench_audit_configmaps.py [--namespaces 2000] [--settings 4000] [--dashboards 300]

The audit watches every ConfigMap (a workload may read any of its namespace, and may come after it), so it
keeps of each only what `exporter.k8s.environment.config_map` reads (`environment.kept`): name, namespace and
the `data` values of 64 KiB or less. The ConfigMaps are a made-up mix, not a recorded cluster: one
`kube-root-ca.crt` per namespace (a 1.1 KB certificate), `--settings` application ConfigMaps of ten short keys
with kubectl's last-applied annotation and managed fields, `--dashboards` Grafana dashboards of 100 to 400 KB
and 100 configs or scripts of 2 to 30 KB. Measured with tracemalloc: the bytes still allocated once every
listed object (decoded from its JSON, as the reflector reads it) is held whole, as `data` alone, and as the
audit's record; and the CPU of the transform per object. Target: the records at most 32 MiB at the defaults
(the objects held whole would take some 170 MiB of the 400 MiB the cluster role aims at in all).
"""

from __future__ import annotations

import argparse
import gc
import json
import random
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from exporter.audit import live
from exporter.audit.recognise import DEFAULT

TARGET_MIB = 32.0
CERT = "-----BEGIN CERTIFICATE-----\n" + "MIIC" * 275 + "\n-----END CERTIFICATE-----\n"


def config_map(namespace: str, name: str, data: dict[str, str]) -> str:
    """The JSON of a ConfigMap as the API server lists it (applied with kubectl)."""
    applied = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "data": data})
    meta = {
        "name": name,
        "namespace": namespace,
        "uid": f"{random.getrandbits(128):032x}",
        "resourceVersion": str(random.randint(10**5, 10**7)),
        "creationTimestamp": "2026-11-01T00:00:00Z",
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": applied},
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsV1": {"f:data": dict.fromkeys(data)}}],
    }
    return json.dumps({"metadata": meta, "data": data})


def cluster(namespaces: int, settings: int, dashboards: int) -> list[str]:
    random.seed(1)
    out = [json.dumps({"metadata": {"name": "kube-root-ca.crt", "namespace": f"team-{i}"}, "data": {"ca.crt": CERT}})
           for i in range(namespaces)]  # fmt: skip
    for i in range(settings):
        data = {f"SETTING_{k}": "v" * random.randint(4, 200) for k in range(10)}
        out.append(config_map(f"team-{i % namespaces}", f"app-{i}", data))
    for i in range(dashboards):
        out.append(
            config_map(
                "monitoring", f"dashboard-{i}", {f"d{i}.json": "{" + "x" * random.randint(10**5, 4 * 10**5) + "}"}
            )
        )
    for i in range(100):
        out.append(
            config_map(f"team-{i % namespaces}", f"config-{i}", {"config.yaml": "y" * random.randint(2000, 30000)})
        )
    return out


def held_mib(listed: list[str], keep: Callable[[dict[str, Any]], Any]) -> float:
    """MiB still allocated while every object, reduced by `keep`, is held."""
    gc.collect()
    tracemalloc.start()
    held = [keep(json.loads(text)) for text in listed]
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del held
    return current / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--namespaces", type=int, default=2000)
    parser.add_argument("--settings", type=int, default=4000)
    parser.add_argument("--dashboards", type=int, default=300)
    args = parser.parse_args()
    listed = cluster(args.namespaces, args.settings, args.dashboards)
    transform = live.stamp("configmaps", DEFAULT)
    print(f"{len(listed):,} ConfigMaps, {sum(map(len, listed)) / 2**20:.1f} MiB of JSON listed (a made-up mix)")
    print(f"  held whole:        {held_mib(listed, lambda o: o):8.1f} MiB")
    print(f"  their data alone:  {held_mib(listed, lambda o: o.get('data')):8.1f} MiB")
    kept = held_mib(listed, transform)
    print(f"  the audit's records: {kept:6.1f} MiB (target <= {TARGET_MIB:g})")
    objects = [json.loads(text) for text in listed]
    start = time.process_time()
    for obj in objects:
        transform(obj)
    per = (time.process_time() - start) / len(objects)
    print(f"  transform CPU: {per * 1e6:.1f} µs per object")
    if kept > TARGET_MIB:
        print("FAIL: the records exceed the target")
        sys.exit(1)


if __name__ == "__main__":
    main()
