"""A local vLLM on the CPU with a tiny model the project builds itself: for the demo and the end-to-end tests."""
