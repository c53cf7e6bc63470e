"""One reading of Kubernetes: pure readers of the objects every role looks at (no I/O).

`fields` (defensive access to plain object dicts, and where an object came from), `durations` (the time
formats of the proxies), `workloads` (Deployment, StatefulSet and LeaderWorkerSet, their pod templates and
containers, with the API's defaults), `autoscalers` (HPA, KEDA ScaledObject and ScaledJob, AIBrix
PodAutoscaler and VPA, with their controllers' documented defaults; the HPA KEDA or AIBrix makes is named
after the object that owns it), `frontends` (the request timeout and buffering of an Ingress per controller,
an HTTPRoute and an OpenShift Route, with the controllers' documented defaults), `accelerators` (resource
names and taint keys per accelerator kind), `scheduling` (nodeSelector, required node affinity, taints and
tolerations, as the scheduler evaluates them), `selectors` (label selectors), `arguments` (a container's
command and args as the kubelet hands them, `$(VAR)` expanded) and `images` (the digest an image reference
pins or a container status reports). The cluster role's routes
and replicas, the node role's engine discovery (a pod's workload) and the audit read through these, so they
give one answer about one cluster.
"""
