"""One reading of Kubernetes: pure readers of the objects every role looks at (no I/O).

`fields` (defensive access to plain object dicts), `durations` (the time formats of the proxies),
`frontends` (the request timeout and buffering of an Ingress per controller, an HTTPRoute and an OpenShift
Route, with the controllers' documented defaults), `accelerators` (resource names and taint keys per
accelerator kind), `scheduling` (nodeSelector, required node affinity, taints and tolerations, as the
scheduler evaluates them) and `selectors` (label selectors). The cluster role's routes and the audit read
through these, so they give one answer about one cluster.
"""
