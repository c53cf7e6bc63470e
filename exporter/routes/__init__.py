"""Routes in front of the engines: Ingress and HTTPRoute timeouts and buffering (cluster role)."""
