"""The pre-resource filters (exporter/kube/placement.py) and the reasons they give, from real-shaped objects."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.kube.placement import PodIndex, PodIndexCache
from exporter.kube.requests import amount, parse_quantity
from exporter.kube.room import blocking_filter
from exporter.kube.transform import node_record, pod_record
from exporter.kube.view import compute
from exporter.sources.kube_reflector import key_of
from tests.kube.objects import container, node, pod

Obj = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"


def reasons(objects: list[Obj]) -> dict[str, str]:
    nodes = {key_of(o): node_record(o) for o in objects if o["kind"] == "Node"}
    pods = {key_of(o): r for o in objects if o["kind"] == "Pod" and (r := pod_record(o)) is not None}
    return {f"{p.pod}": p.reason for p in compute(nodes, pods).pending}


def labelled(obj: Obj, **labels: str) -> Obj:
    obj["metadata"]["labels"] = dict(labels)
    return obj


def anti_affinity(app: str, key: str = HOST, **term: Any) -> Obj:
    selector = {"matchLabels": {"app": app}}
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector, "topologyKey": key, **term}]
        }
    }


def affinity(app: str, key: str = ZONE) -> Obj:
    selector = {"matchLabels": {"app": app}}
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"labelSelector": selector, "topologyKey": key}]
        }
    }


def spread(obj: Obj, app: str, key: str = ZONE, max_skew: int = 1, **more: Any) -> Obj:
    obj["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": max_skew,
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": app}},
            **more,
        }
    ]
    return obj


def cpu_pod(name: str, cpu: str, node_name: str, memory: str = "1Gi") -> Obj:
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    return pod(name, node=node_name, containers=[{"name": "c", "image": "x", "resources": resources}])


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("1.5Gi", Decimal(3 * 2**29)),
        ("1e3", Decimal(1000)),
        ("2E", Decimal(2 * 10**18)),
        ("64", Decimal(64)),
        ("100k", Decimal(100_000)),
        ("0.1", Decimal("0.1")),
    ],
)
def test_quantities(text: str, value: Decimal) -> None:
    assert parse_quantity(text) == value


def test_scheduler_integers_round_up() -> None:
    assert (amount("cpu", "0.1"), amount("cpu", "1"), amount("memory", "1.5Gi"), amount("memory", "100m")) == (
        100,
        1000,
        3 * 2**29,
        1,
    )
    with pytest.raises(ValueError, match="not a quantity"):
        parse_quantity("12 cores")


def test_two_replicas_with_hostname_anti_affinity_leave_no_candidate_for_the_third() -> None:
    """The false page of the issue: one free GPU on each of two nodes, each already running a replica."""
    rule = anti_affinity("vllm")
    objects = [node("n0", 3), node("n1", 3)]
    for i in range(2):
        objects.append(labelled(pod(f"vllm-{i}", 2, node=f"n{i}", affinity=rule), app="vllm"))
    objects.append(labelled(pod("vllm-2", 2, affinity=rule), app="vllm"))
    assert reasons(objects) == {"vllm-2": "pod_affinity"}
    # the running replicas' own terms keep it out as well
    objects[-1] = labelled(pod("vllm-2", 2), app="vllm")
    assert reasons(objects) == {"vllm-2": "pod_affinity"}
    # without the rule it is fragmentation: 1 + 1 free, 2 asked
    for replica in objects[2:]:
        replica["spec"].pop("affinity", None)
    assert reasons(objects) == {"vllm-2": "fragmented"}


def test_an_existing_pods_anti_affinity_keeps_the_pod_out_of_its_zone() -> None:
    objects = [
        node("a0", 4, labels={ZONE: "a"}),
        node("a1", 4, labels={ZONE: "a"}),
        labelled(cpu_pod("loner-0", "1", "a0"), app="loner"),
        labelled(pod("vllm-0", 2), app="vllm"),
    ]
    objects[2]["spec"]["affinity"] = anti_affinity("vllm", key=ZONE)
    assert reasons(objects) == {"vllm-0": "pod_affinity"}
    objects[2]["spec"]["affinity"] = anti_affinity("other", key=ZONE)  # selects other pods: no effect
    assert reasons(objects) == {"vllm-0": "backoff"}


def test_anti_affinity_in_another_namespace_needs_the_namespace_named() -> None:
    objects = [node("n0", 4), labelled(cpu_pod("cache-0", "1", "n0"), app="cache"), pod("vllm-0", 2)]
    objects[2]["metadata"]["namespace"] = "ml"
    objects[2]["spec"]["affinity"] = anti_affinity("cache")
    assert reasons(objects) == {"vllm-0": "backoff"}  # own namespace only: the cache is in default
    objects[2]["spec"]["affinity"] = anti_affinity("cache", namespaces=["default"])
    assert reasons(objects) == {"vllm-0": "pod_affinity"}
    selector = {"matchLabels": {"kubernetes.io/metadata.name": "default"}}
    objects[2]["spec"]["affinity"] = anti_affinity("cache", namespaceSelector=selector)
    assert reasons(objects) == {"vllm-0": "pod_affinity"}
    # a namespaceSelector on labels the view does not know: the term is not evaluated (never guessed)
    objects[2]["spec"]["affinity"] = anti_affinity("cache", namespaceSelector={"matchLabels": {"team": "x"}})
    assert reasons(objects) == {"vllm-0": "backoff"}


def test_required_affinity_needs_a_matching_pod_in_the_domain() -> None:
    objects = [
        node("a0", 4, labels={ZONE: "a"}),
        node("b0", labels={ZONE: "b"}),  # the cache runs on a node without GPUs
        labelled(cpu_pod("cache-0", "1", "b0"), app="cache"),
        pod("vllm-0", 2, affinity=affinity("cache")),
    ]
    assert reasons(objects) == {"vllm-0": "pod_affinity"}
    objects[1]["metadata"]["labels"][ZONE] = "a"  # the same zone
    assert reasons(objects) == {"vllm-0": "backoff"}


def test_the_first_of_a_self_affine_series_may_go_anywhere_with_the_key() -> None:
    first = labelled(pod("vllm-0", 2, affinity=affinity("vllm")), app="vllm")
    assert reasons([node("a0", 4, labels={ZONE: "a"}), first]) == {"vllm-0": "backoff"}
    assert reasons([node("nozone", 4), first]) == {"vllm-0": "pod_affinity"}  # the node lacks the key


def test_cpu_and_memory_taken_on_the_gpu_nodes() -> None:
    objects = [node("n0", 8), node("n1", 8), cpu_pod("etl-0", "63", "n0"), cpu_pod("etl-1", "1", "n1", "500Gi")]
    objects.append(pod("vllm-0", 2))  # asks cpu 1 and memory 1Gi: n0 has 0.9 cpu left, n1 3Gi of memory
    assert reasons(objects) == {"vllm-0": "backoff"}
    objects[3] = cpu_pod("etl-1", "1", "n1", "503Gi")
    assert reasons(objects) == {"vllm-0": "other_resources"}


def test_the_pods_count_of_a_node_is_a_resource() -> None:
    full = node("n0", 8)
    full["status"]["allocatable"]["pods"] = "1"
    assert reasons([full, cpu_pod("daemon-0", "10m", "n0", "1Mi"), pod("vllm-0", 1)]) == {"vllm-0": "other_resources"}


def test_other_extended_resources_and_pod_level_resources() -> None:
    rdma = pod("vllm-0", 1, containers=[container("main", 1)])
    rdma["spec"]["containers"][0]["resources"]["limits"]["rdma/ib"] = "1"
    assert reasons([node("n0", 8), rdma]) == {"vllm-0": "other_resources"}  # no node offers rdma/ib
    big = pod("vllm-1", 1)
    big["spec"]["resources"] = {"requests": {"cpu": "100"}}  # pod-level: replaces the containers' sum
    assert reasons([node("n0", 8), big]) == {"vllm-1": "other_resources"}


def test_topology_spread_counts_domains_without_gpus() -> None:
    """Two replicas in zone a, none in b: a third in a would make the skew 3 − 0 > 1; b has no GPU node."""
    objects = [node("a0", 8, labels={ZONE: "a"}), node("b-cpu", labels={ZONE: "b"})]
    for i in range(2):
        objects.append(labelled(pod(f"vllm-{i}", 1, node="a0"), app="vllm"))
    objects.append(spread(labelled(pod("vllm-2", 1), app="vllm"), "vllm"))
    assert reasons(objects) == {"vllm-2": "topology_spread"}
    objects[-1] = spread(labelled(pod("vllm-2", 1), app="vllm"), "vllm", max_skew=3)
    assert reasons(objects) == {"vllm-2": "backoff"}


def test_topology_spread_policies_min_domains_and_label_keys() -> None:
    base = [node("a0", 8, labels={ZONE: "a"}), labelled(pod("vllm-0", 1, node="a0"), app="vllm", rev="1")]
    alone = spread(labelled(pod("vllm-1", 1), app="vllm", rev="1"), "vllm")
    assert reasons([*base, alone]) == {"vllm-1": "backoff"}  # one domain: skew 2 − 1 = 1
    alone = spread(labelled(pod("vllm-1", 1), app="vllm", rev="1"), "vllm", minDomains=2)
    assert reasons([*base, alone]) == {"vllm-1": "topology_spread"}  # fewer domains than minDomains: min 0
    # a node the pod's selector excludes is not a domain (nodeAffinityPolicy Honor) ...
    other = node("b0", labels={ZONE: "b", "pool": "cpu"})
    picky = spread(labelled(pod("vllm-1", 1, node_selector={ZONE: "a"}), app="vllm", rev="1"), "vllm")
    assert reasons([*base, other, picky]) == {"vllm-1": "backoff"}
    # ... unless the policy says Ignore
    ignoring = spread(
        labelled(pod("vllm-1", 1, node_selector={ZONE: "a"}), app="vllm", rev="1"), "vllm", nodeAffinityPolicy="Ignore"
    )
    assert reasons([*base, other, ignoring]) == {"vllm-1": "topology_spread"}
    # matchLabelKeys: pods of another revision do not count
    new_rev = spread(labelled(pod("vllm-1", 1), app="vllm", rev="2"), "vllm", matchLabelKeys=["rev"])
    assert reasons([*base, other, new_rev]) == {"vllm-1": "backoff"}


def test_terminating_pods_hold_resources_but_do_not_count_for_spread() -> None:
    leaving = labelled(pod("vllm-0", 1, node="a0"), app="vllm")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    objects = [node("a0", 2, labels={ZONE: "a"}), node("b-cpu", labels={ZONE: "b"}), leaving]
    objects.append(spread(labelled(pod("vllm-1", 1), app="vllm"), "vllm"))
    assert reasons(objects) == {"vllm-1": "backoff"}


def test_schedule_anyway_only_scores() -> None:
    objects = [node("a0", 8, labels={ZONE: "a"}), node("b-cpu", labels={ZONE: "b"})]
    objects += [labelled(pod(f"vllm-{i}", 1, node="a0"), app="vllm") for i in range(3)]
    objects.append(spread(labelled(pod("vllm-3", 1), app="vllm"), "vllm", whenUnsatisfiable="ScheduleAnyway"))
    assert reasons(objects) == {"vllm-3": "backoff"}


def test_host_ports_and_volumes_leave_it_at_fits() -> None:
    ported = pod("vllm-0", 1, containers=[container("main", 1, ports=[{"containerPort": 80, "hostPort": 80}])])
    claimed = pod("vllm-1", 1)
    claimed["spec"]["volumes"] = [{"name": "w", "persistentVolumeClaim": {"claimName": "weights"}}]
    assert reasons([node("n0", 8), ported, claimed]) == {"vllm-0": "fits", "vllm-1": "fits"}


def test_the_blocking_filter_holds_back_the_most_gpus_ties_in_scheduler_order() -> None:
    assert blocking_filter({"pod_affinity": 2, "other_resources": 1}) == "pod_affinity"
    assert blocking_filter({"pod_affinity": 1, "other_resources": 1}) == "other_resources"
    assert blocking_filter({"pod_affinity": 1, "topology_spread": 1}) == "topology_spread"


# -- the index kept from one view to the next ---------------------------------------------------------------
TEMPLATES = [
    labelled(pod("a-0", 1, node="n0"), app="a"),
    labelled(pod("b-0", 2, node="n1", affinity=anti_affinity("b")), app="b"),
    labelled(cpu_pod("etl-0", "3", "n0"), app="etl"),
    labelled(pod("c-0", 1), app="c"),  # unbound: never in the index
]


def _variant(template: int, name: str, node: str, namespace: str, terminating: bool, phase: str) -> Obj:
    obj = copy.deepcopy(TEMPLATES[template])
    obj["metadata"].update(name=name, namespace=namespace)
    if obj["spec"].get("nodeName"):
        obj["spec"]["nodeName"] = node
        obj["status"]["phase"] = phase
    if terminating:
        obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return obj


changes = st.lists(
    st.tuples(
        st.sampled_from([f"p{i}" for i in range(6)]),  # which pod
        st.none()
        | st.tuples(
            st.integers(0, 3),
            st.sampled_from(["n0", "n1", "gone"]),
            st.sampled_from(["x", "y"]),
            st.booleans(),
            st.sampled_from(["Running", "Pending", "Succeeded"]),
        ),
    ),
    max_size=30,
)


@settings(max_examples=150, deadline=None)
@given(steps=st.lists(changes, min_size=1, max_size=4))
def test_the_kept_index_agrees_with_one_built_afresh(steps: list[list[tuple[str, Any]]]) -> None:
    """Views after rounds of watch events (added, changed, deleted pods): the index moved along with the
    changes holds what one built from the view's pods holds, and the verdicts are the same."""
    nodes = {n: node_record(node(n, 4, labels={ZONE: "a"})) for n in ("n0", "n1")}
    cache = PodIndexCache()
    pods: dict[str, Any] = {}
    waiting = pod_record(labelled(pod("w-0", 3, affinity=anti_affinity("b")), app="b"))
    for round_ in steps:
        pods = dict(pods)  # each view is a new snapshot, as the reflectors hand them out
        for name, change in round_:
            if change is None:
                pods.pop(f"x/{name}", None)
            else:
                template, node_name, namespace, terminating, phase = change
                record = pod_record(_variant(template, name, node_name, namespace, terminating, phase))
                if record is None:
                    pods.pop(f"x/{name}", None)  # finished, or unbound without GPUs: the reflector drops it
                else:
                    pods[f"x/{name}"] = record
        pods["x/w-0"] = waiting
        kept = cache.index(nodes, pods)
        assert kept.summary() == PodIndex(nodes, pods.values()).summary()
        assert compute(nodes, pods, index_cache=cache).pending == compute(nodes, pods).pending


def test_selectors_with_expressions_only_and_several_match_labels() -> None:
    by_expression = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["vllm"]}]},
                    "topologyKey": HOST,
                }
            ]
        }
    }
    objects = [node("n0", 4), labelled(pod("vllm-0", 1, node="n0", affinity=by_expression), app="vllm")]
    objects.append(labelled(pod("vllm-1", 1), app="vllm"))
    assert reasons(objects) == {"vllm-1": "pod_affinity"}  # the running pod's term, without matchLabels
    both = anti_affinity("vllm")
    both["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["labelSelector"]["matchLabels"][
        "tier"
    ] = "gpu"
    objects = [node("n0", 4), labelled(cpu_pod("vllm-0", "1", "n0"), app="vllm")]
    objects.append(labelled(pod("vllm-1", 1, affinity=both), app="vllm"))
    assert reasons(objects) == {"vllm-1": "backoff"}  # the running pod lacks tier=gpu
    objects[1]["metadata"]["labels"]["tier"] = "gpu"
    assert reasons(objects) == {"vllm-1": "pod_affinity"}
