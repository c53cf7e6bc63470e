"""Just enough PromQL, at the bottom of the house: tokens, selectors, structure, and the rewrites that scope
an expression to a job or a cluster. It imports nothing else of the project, so the alert rules, `check`,
`diagnose`, the watchdog and the bundle renderer all read expressions the same way."""
