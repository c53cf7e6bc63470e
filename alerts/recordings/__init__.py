"""The recording rules of the bundle, one module per rule group, each a function `recordings(t)`."""
