"""The controller's side of the CPU path (docs/controller.md#the-cpu-path):
what it answers for the frames the data plane punts (ICMP errors, echo
replies the data plane does not give, router advertisements), and the
packet-outs it sends back. Independent of how packet-in and packet-out
metadata are encoded (dataplane/packet_io.py): it takes ``PuntedFrame`` and
gives ``Emit`` (frames.py)."""
