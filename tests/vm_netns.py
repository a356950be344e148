"""A VM behind a ToR port, in a network namespace: the port's far end moved
into the namespace as the VM's server, the VM's own interface (its MAC and
IP) behind a userspace VLAN tagger (vlan_relay.py: the VF's VLAN; the
container's kernel may have neither VLAN devices nor bridge VLAN filtering).

    ToR port ══ iface [ns] ── vlan_relay.py (VLAN) ── acc ══ vm (MAC, IP)

The caller deletes the namespace and stops the relay it is handed.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from p4vtep.model.fabric import Vm

RELAY = Path(__file__).with_name("vlan_relay.py")


def vm_behind_port(
    ns: str, iface: str, vm: Vm, gateway: str | None = None, gateway6: str | None = None
) -> subprocess.Popen[bytes]:
    """Move ``iface`` (a ToR port's far end) into namespace ``ns`` as the
    server of ``vm``: the VM's interface ``vm`` with its MAC and first IP
    (/24; a default route via ``gateway`` when given) behind a VLAN tagger,
    whose process is returned. With ``gateway6`` the VM is dual-stack: its
    IPv6 addresses (/64, no DAD) and a default route via ``gateway6`` on
    ``vm`` only (the server's interfaces stay without IPv6), and it does
    not forward (a host: its neighbour adverts carry no router flag)."""

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True)

    ip("netns", "add", ns)
    ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
    ip("link", "set", iface, "netns", ns)
    ip("-n", ns, "link", "set", iface, "up")
    ip("-n", ns, "link", "add", "vm", "address", vm.mac, "type", "veth", "peer", "acc")
    for dev in ("vm", "acc"):
        subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-K", dev, "tx", "off"],
                       check=False, capture_output=True)  # fmt: skip
        ip("-n", ns, "link", "set", dev, "up")
    ip("-n", ns, "addr", "add", f"{vm.ips[0]}/24", "dev", "vm")
    if gateway is not None:
        ip("-n", ns, "route", "add", "default", "via", gateway)
    if gateway6 is not None:
        for key in ("disable_ipv6=0", "accept_ra=0", "forwarding=0"):
            ip("netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.vm.{key}")
        ip("netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=0")
        for address in (a for a in vm.ips if ":" in a):
            ip("-n", ns, "addr", "add", f"{address}/64", "dev", "vm", "nodad")
        ip("-n", ns, "-6", "route", "add", "default", "via", gateway6)
    return subprocess.Popen(
        ["ip", "netns", "exec", ns, sys.executable, str(RELAY), iface, "acc", str(vm.vlan)],
        stdin=subprocess.DEVNULL,
    )
