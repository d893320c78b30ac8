"""What the tests share and are not tests themselves: the real servers the integration tests start, a fault-injecting
proxy, a batch-API server, the hostile-input catalogue, the source parser, gate and virtual-time helpers."""
