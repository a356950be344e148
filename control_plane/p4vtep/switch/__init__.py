"""One switch's life: its P4Runtime session and what keeps it in the desired
state (``supervisor``, ``reconciler``), and BMv2 itself (``bmv2`` starts a
``simple_switch_grpc``; ``bmv2_thrift`` and ``queue_rates`` set what
P4Runtime cannot reach). Imports ``compiler``, ``dataplane``, ``model`` and
``runtime``; never the controller."""
