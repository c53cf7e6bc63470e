"""LLM gateways (proxies in front of engines that know who asked): readers per gateway, the tenant bound, the
collector of `gateways.targets`."""
