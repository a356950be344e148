"""p4vtep: offload the VXLAN overlay from servers to a P4 top-of-rack switch."""

__version__ = "0.1.0"
