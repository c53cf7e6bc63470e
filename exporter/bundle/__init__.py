"""The bundle: generated dashboards, alert rules and manifests (`render`), and the empty-query check (`check`)."""
