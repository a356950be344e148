"""The desired state as plain data, and every check on it.

``fabric`` holds the model itself (ToRs, servers, VNIs, VRFs, VMs);
``allocation`` the indices the pipeline gives them; ``validation`` and
``routing_checks`` every refusal of bad input. Pure: no I/O, no switch, no
threads. Imports ``dataplane`` (table sizes, value ranges) and nothing above.
"""
