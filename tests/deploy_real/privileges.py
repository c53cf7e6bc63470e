"""What a subject may do, as the real authorizer decides it: a SubjectAccessReview for every verb of every
resource and subresource the API server's discovery lists."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.kubecluster import Cluster

# (apiGroup, resource or resource/subresource, verb)
Access = tuple[str, str, str]


def discovered(api: Cluster) -> list[tuple[str, str, bool, list[str]]]:
    """(group, resource, namespaced, verbs) of every resource the server serves, preferred versions."""
    versions = [("", "v1")]
    _, groups = api.request("GET", "/apis")
    versions += [(g["name"], g["preferredVersion"]["version"]) for g in groups["groups"]]
    out = []
    for group, version in versions:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        status, body = api.request("GET", path)
        assert status == 200, f"{path}: {status}"
        out += [(group, r["name"], r["namespaced"], r.get("verbs", [])) for r in body["resources"]]
    return out


def allowed(api: Cluster, user: str, namespace: str) -> set[Access]:
    """Every (group, resource, verb) the authorizer allows `user` in `namespace` ("" = cluster scope)."""
    groups = ["system:authenticated"]
    if user.startswith("system:serviceaccount:"):
        groups += ["system:serviceaccounts", f"system:serviceaccounts:{user.split(':')[2]}"]
    checks = [(g, r, v) for g, r, namespaced, verbs in discovered(api) for v in verbs if namespaced or not namespace]

    def review(check: Access) -> bool:
        group, resource, verb = check
        name, _, sub = resource.partition("/")
        attributes = {"group": group, "resource": name, "subresource": sub, "verb": verb, "namespace": namespace}
        body = {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": groups, "resourceAttributes": attributes},
        }
        status, answer = api.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body)
        assert status == 201, f"SubjectAccessReview: {status} {answer}"
        return bool(answer["status"].get("allowed"))

    with ThreadPoolExecutor(8) as pool:
        return {check for check, ok in zip(checks, pool.map(review, checks), strict=True) if ok}
