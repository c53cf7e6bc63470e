"""Properties of the cgroup parser: any text is answered (never an exception, at most one pod), and every
layout the kubelet and the runtimes write gives back the pod UID and container ID it was built from."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from exporter.gpu.cgroups import CgroupContainer, container_of

UIDS = st.uuids(version=4).map(str)
CIDS = st.binary(min_size=32, max_size=32).map(bytes.hex)
QOS = st.sampled_from(["", "burstable", "besteffort"])
RUNTIME = st.sampled_from(["cri-containerd", "crio", "docker"])


def systemd(uid: str, cid: str, qos: str, runtime: str) -> str:
    slice_uid = uid.replace("-", "_")
    parent = (
        f"/kubepods.slice/kubepods-{qos}.slice/kubepods-{qos}-pod{slice_uid}.slice"
        if qos
        else (f"/kubepods.slice/kubepods-pod{slice_uid}.slice")
    )
    return f"{parent}/{runtime}-{cid}.scope"


def cgroupfs(uid: str, cid: str, qos: str) -> str:
    return f"/kubepods/{qos}/pod{uid}/{cid}" if qos else f"/kubepods/pod{uid}/{cid}"


@given(st.text(max_size=400))
def test_any_text_is_answered(text: str) -> None:
    found = container_of(text)
    assert found is None or isinstance(found, CgroupContainer)


@given(UIDS, CIDS, QOS, RUNTIME, st.booleans(), st.integers(min_value=0, max_value=4))
def test_every_kubelet_layout_gives_back_its_pod_and_container(
    uid: str, cid: str, qos: str, runtime: str, v1: bool, ups: int
) -> None:
    path = systemd(uid, cid, qos, runtime)
    path = "/.." * ups + path.removeprefix("/kubepods.slice") if ups else path  # read from another namespace
    text = f"12:memory:{path}\n1:name=systemd:{path}\n0::/\n" if v1 else f"0::{path}\n"
    assert container_of(text) == CgroupContainer(uid, cid)
    assert container_of(f"0::{cgroupfs(uid, cid, qos)}\n") == CgroupContainer(uid, cid)


@given(UIDS, CIDS)
def test_a_container_outside_kubepods_belongs_to_no_pod(uid: str, cid: str) -> None:
    assert container_of(f"0::/system.slice/docker-{cid}.scope\n") is None
    assert container_of(f"0::/machine.slice/libpod-{cid}.scope\n") is None
    assert uuid.UUID(uid)  # the strategy's UIDs are what the API server issues
