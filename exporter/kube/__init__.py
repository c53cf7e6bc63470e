"""The cluster role: GPU capacity per node and resource, and why GPU pods are Pending.

`records` (compact per-object records), `transform` (API objects → records), `requests` (effective pod
requests), `eligibility` (where a pod may go), `dra` (ResourceSlices minus ResourceClaims), `capacity`
(allocatable/allocated/free), `pending` (the reasons), `view` (one computation of all of it), `render`
(the metric families) and `collector` (reflectors + caching). All but `collector` are pure functions.
"""
