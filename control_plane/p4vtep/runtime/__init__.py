"""P4Runtime client library: connection, P4Info-driven encoding, entity builders.

Nothing here knows about the p4vtep pipeline; ``p4vtep.dataplane`` does.
"""
