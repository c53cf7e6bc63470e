"""Test doubles shared by several test packages (a fake Kubernetes API server, …)."""
