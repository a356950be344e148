"""High availability: a controller replica that follows the etcd state and
leads when elected (``replica``). The election itself is ``state.leadership``."""
