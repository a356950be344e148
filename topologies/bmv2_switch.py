"""A Mininet switch that runs BMv2 simple_switch_grpc (P4Runtime).

    net.addSwitch("tor1", cls=MininetBmv2Switch, grpc_port=9560, device_id=1)

The switch starts with no program; a P4Runtime controller pushes one. Each
instance needs its own gRPC and Thrift ports. Options: ``log_dir`` (switch
console output, and BMv2's own log with ``debug_log=True``), ``pcap_dir``
(per-port captures). The command line is p4vtep.switch.bmv2's, the same as
`p4vtep switch run` builds (CPU port, priority queues, replication limits).
"""

from __future__ import annotations

from pathlib import Path

from mininet.node import Switch
from p4vtep.switch.bmv2 import Bmv2Switch


class MininetBmv2Switch(Switch):
    def __init__(
        self,
        name: str,
        grpc_port: int,
        device_id: int,
        thrift_port: int | None = None,
        log_dir: str = "logs/mininet",
        pcap_dir: str | None = None,
        debug_log: bool = False,
        **params,
    ) -> None:
        Switch.__init__(self, name, **params)
        self.process = Bmv2Switch(
            name,
            device_id,
            grpc_port,
            thrift_port or grpc_port + 1000,
            log_dir=Path(log_dir),
            debug_log=debug_log,
        )
        self.pcap_dir = pcap_dir

    @property
    def grpc_address(self) -> str:
        return self.process.grpc_address

    def start(self, controllers) -> None:
        # Port numbers as given to addLink; port 0 is Mininet's loopback.
        self.process.ports = {
            port: intf.name for port, intf in self.intfs.items() if port != 0 and intf.name != "lo"
        }
        for intf in self.intfList():
            if intf.name != "lo":
                # Room for VXLAN (+50 bytes) and VLAN tags on every port.
                self.cmd(f"ip link set {intf.name} mtu 9000")
                # Frames must reach BMv2 as they are on the wire.
                self.cmd(
                    f"ethtool -K {intf.name} tx off rx off tso off gso off gro off "
                    "rxvlan off txvlan off >/dev/null 2>&1"
                )
        if self.pcap_dir:
            Path(self.pcap_dir).mkdir(parents=True, exist_ok=True)
            self.process.extra_args = ["--pcap", self.pcap_dir]
        self.process.start()

    def stop(self, deleteIntfs: bool = True) -> None:
        self.process.stop()
        super().stop(deleteIntfs)

    def restart(self) -> None:
        """Kill and start again (the controller must restore it)."""
        self.process.restart()
