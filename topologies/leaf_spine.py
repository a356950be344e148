"""The demo fabric in Mininet, built from the same fabric and inventory files
the controller reads.

    spines  sp1           sp2            Linux routers: a /32 per VTEP
             |  \\        / |
    ToRs    tor1 (BMv2)  tor2 (BMv2)     ports 1-2 servers, 3-4 uplinks
            /  \\         /  \\
    servers s11 s12      s21 s22         SR-IOV NIC model: VLAN bridge,
            |   |        |   |           one access port (VF) per VM
    VMs     a1  a2 ...                   network namespaces

A server does no overlay work: its "NIC" (sriov_nic.py) tags each VM's
frames with the VF's VLAN toward the ToR and hands each VM only the frames of
its VLAN, untagged, exactly what an SR-IOV VF with a port VLAN does.
"""

from __future__ import annotations

import ipaddress
import json
import logging
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from bmv2_switch import MininetBmv2Switch
from frr_host import FrrHostPlan
from frr_vrf import run
from mininet.net import Mininet
from mininet.node import Host
from p4vtep.model.addressing import link_local
from p4vtep.model.fabric import Fabric, Vm
from p4vtep.model.port_security import eui64_address
from p4vtep.processes import stop_processes
from p4vtep.sources.fabric_file import load_fabric, load_inventory

HERE = Path(__file__).resolve().parent
FABRIC_FILE = HERE / "fabric.yaml"
INVENTORY_FILE = HERE / "inventory.yaml"
SPINES = ("sp1", "sp2")
SUBNET_PREFIX = 24
UNDERLAY_MTU = 9000


@dataclass
class LeafSpine:
    net: Mininet
    fabric: Fabric
    vms: dict[str, Vm]
    vm_port: dict[str, str] = field(default_factory=dict)  # VM -> its server-side port
    run_dir: Path = Path("/tmp")
    nics: dict[str, subprocess.Popen] = field(default_factory=dict)
    frr: FrrHostPlan | None = None  # the FRR host of `make demo EVPN=1`

    def vm(self, name: str) -> Host:
        return self.net.get(name)


def spine_mac(spine: int, tor: int) -> str:
    return f"00:5e:00:{spine:02x}:00:{tor:02x}"


def build(
    log_dir: str = "logs/mininet",
    run_dir: Path = Path("/tmp"),
    fabric_file: Path = FABRIC_FILE,
    inventory_file: Path = INVENTORY_FILE,
    frr: FrrHostPlan | None = None,
) -> LeafSpine:
    # The loader warns about a subnet advertised for SLAAC: the demo's is
    # meant (a5, a6 list their EUI-64 addresses); controller.log keeps it.
    loader_log = logging.getLogger("p4vtep.sources.fabric_file")
    level = loader_log.level
    loader_log.setLevel(logging.ERROR)
    try:
        fabric = load_fabric(fabric_file)
    finally:
        loader_log.setLevel(level)
    vms = {vm.name: vm for vm in load_inventory(inventory_file)}
    net = Mininet(controller=None, autoSetMacs=False, autoStaticArp=False, cleanup=False)
    tors = {}
    for tor in fabric.tors.values():
        grpc_port = int(tor.address.rsplit(":", 1)[1])
        tors[tor.name] = net.addSwitch(
            tor.name,
            cls=MininetBmv2Switch,
            grpc_port=grpc_port,
            device_id=tor.device_id,
            log_dir=log_dir,
        )
    spines = [net.addHost(name, ip=None) for name in SPINES]
    for t, tor in enumerate(fabric.tors.values(), start=1):
        for s, (spine, uplink) in enumerate(zip(spines, tor.uplinks, strict=True), start=1):
            net.addLink(tors[tor.name], spine, port1=uplink.port, addr2=spine_mac(s, t))
    servers = {}
    for server in fabric.servers.values():
        servers[server.name] = net.addHost(server.name, ip=None)
        net.addLink(tors[server.tor], servers[server.name], port1=server.port)
    layout = LeafSpine(net, fabric, vms, run_dir=run_dir, frr=frr)
    for vm in vms.values():
        host = net.addHost(vm.name, ip=None, mac=vm.mac)
        link = net.addLink(host, servers[vm.server], addr1=vm.mac)
        layout.vm_port[vm.name] = link.intf2.name
    if frr is not None:
        # A Linux EVPN VTEP on both spines (frr_host.py), and its VM.
        frr_host = net.addHost(frr.name, ip=None)
        for spine in spines:
            net.addLink(frr_host, spine)
        c1 = net.addHost(frr.vm_name, ip=None, mac=frr.vm_mac)
        net.addLink(c1, frr_host, addr1=frr.vm_mac)
        # A host of the routed tenant (its port moves into FRR's VRF).
        c2 = net.addHost(frr.routed_vm_name, ip=None, mac=frr.routed_vm_mac)
        net.addLink(c2, frr_host, addr1=frr.routed_vm_mac)
    return layout


def configure(layout: LeafSpine) -> None:
    """Everything Mininet does not do: server NICs, spine routes, VM addresses."""
    fabric = layout.fabric
    for host in layout.net.hosts:
        for intf in host.intfList():
            host.cmd(
                f"ethtool -K {intf.name} tx off rx off tso off gso off gro off "
                "rxvlan off txvlan off >/dev/null 2>&1"
            )
        host.cmd("sysctl -qw net.ipv6.conf.all.disable_ipv6=1")
    # Spines: forward the underlay; a /32 and a static neighbour per VTEP.
    for spine_name in SPINES:
        spine = layout.net.get(spine_name)
        spine.cmd("sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0")
        for t, tor in enumerate(fabric.tors.values()):
            intf = spine.intfList()[t]
            spine.cmd(f"ip link set {intf.name} mtu {UNDERLAY_MTU} up")
            spine.cmd(f"sysctl -qw net.ipv4.conf.{intf.name}.rp_filter=0")
            spine.cmd(f"ip route replace {tor.vtep_ip}/32 dev {intf.name}")
            spine.cmd(
                f"ip neigh replace {tor.vtep_ip} lladdr {tor.router_mac} "
                f"dev {intf.name} nud permanent"
            )
    # Servers: the SR-IOV NIC model.
    for server in fabric.servers.values():
        host = layout.net.get(server.name)
        uplink = host.intfList()[0].name
        host.cmd(f"ip link set {uplink} mtu {UNDERLAY_MTU} up")
        write_vfs(layout, server.name)
        layout.nics[server.name] = host.popen(
            [
                sys.executable,
                str(HERE / "sriov_nic.py"),
                "--uplink",
                uplink,
                "--vfs",
                str(vf_file(layout, server.name)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    for vm in layout.vms.values():
        host = layout.vm(vm.name)
        intf = host.intfList()[0].name
        host.cmd(f"ip addr flush dev {intf}")
        host.cmd(f"ip addr add {vm.ips[0]}/{SUBNET_PREFIX} dev {intf}")
        if ipv6_addresses(layout, vm):
            # Dual-stack: IPv6 back on; addresses static, or formed from the
            # ToRs' router advertisements (a VM in a SLAAC subnet).
            host.cmd(f"sysctl -qw {ipv6_sysctls(layout, vm, intf)}")
            for address in static_ipv6_addresses(layout, vm):
                host.cmd(f"ip -6 addr add {address} dev {intf}")
        host.cmd(f"ip link set {intf} up")
        set_gateway(layout, vm, intf)
    if layout.frr is not None:
        configure_frr_host(layout, layout.frr)


def configure_frr_host(layout: LeafSpine, plan: FrrHostPlan) -> None:
    """frr1's underlay (VTEP on lo, ECMP over both spines, each spine a /32
    route to it), its bridge and VXLAN device, its VM, the routed tenant's
    VRF with its host c2 (frr_vrf.py), and the management link to the
    controller in the root namespace. FRR itself is started by the demo
    (frr_host.FrrDaemons)."""
    host = layout.net.get(plan.name)
    # frr1's namespace by a name, for `ip -n` and `ip netns exec` (the VRF's
    # namespace is made from the root's view, which Mininet hosts do not share).
    run("ip", "netns", "del", plan.netns, check=False)  # (a name a killed demo left)
    run("ip", "netns", "attach", plan.netns, str(host.pid))
    tor_count = len(layout.fabric.tors)
    host.cmd("sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0")
    host.cmd(f"ip addr add {plan.vtep_ip}/32 dev lo; ip link set lo up")
    hops = []
    for s, spine_name in enumerate(SPINES, start=1):
        spine = layout.net.get(spine_name)
        spine_ip, frr_ip = plan.spine_link(s)
        spine_intf = spine.intfList()[tor_count].name  # after one link per ToR
        frr_intf = host.intfList()[s - 1].name
        spine.cmd(f"ip link set {spine_intf} mtu {UNDERLAY_MTU} up")
        spine.cmd(f"sysctl -qw net.ipv4.conf.{spine_intf}.rp_filter=0")
        spine.cmd(f"ip addr add {spine_ip}/31 dev {spine_intf}")
        spine.cmd(f"ip route replace {plan.vtep_ip}/32 via {frr_ip}")
        host.cmd(f"ip link set {frr_intf} mtu {UNDERLAY_MTU} up")
        host.cmd(f"sysctl -qw net.ipv4.conf.{frr_intf}.rp_filter=0")
        host.cmd(f"ip addr add {frr_ip}/31 dev {frr_intf}")
        hops.append(f"nexthop via {spine_ip}")
    vteps = sorted({t.vtep_ip for t in layout.fabric.tors.values()})
    for vtep in vteps:
        host.cmd(f"ip route replace {vtep}/32 {' '.join(hops)}")
    # The Linux VTEP: one bridge and one VXLAN device for the VNI, the VM's port on it.
    vni = plan.vni
    vm_port = host.intfList()[len(SPINES)].name
    host.cmd(f"ip link add br{vni} type bridge")
    host.cmd(
        f"ip link add vxlan{vni} type vxlan id {vni} local {plan.vtep_ip} dstport 4789 nolearning"
    )
    host.cmd(f"ip link set vxlan{vni} master br{vni}; ip link set {vm_port} master br{vni}")
    host.cmd(f"ip link set br{vni} up; ip link set vxlan{vni} up; ip link set {vm_port} up")
    vm = layout.net.get(plan.vm_name)
    vm_intf = vm.intfList()[0].name
    vm.cmd(f"ip addr add {plan.vm_ip}/{SUBNET_PREFIX} dev {vm_intf}; ip link set {vm_intf} up")
    # The routed tenant: FRR's VRF (a namespace), its L3 VNI and the routed
    # VNI's SVI with the anycast gateway; c2's port moves onto that bridge.
    tenant = plan.tenant(layout.fabric)
    tenant.remove()  # (a namespace a killed demo left)
    tenant.build()
    c2_port = host.intfList()[len(SPINES) + 1].name
    run("ip", "-n", plan.netns, "link", "set", c2_port, "netns", tenant.ns)
    tenant.attach_port(c2_port, plan.routed_vni)
    c2 = layout.net.get(plan.routed_vm_name)
    c2_intf = c2.intfList()[0].name
    [svi] = tenant.svis
    c2.cmd(
        f"ip addr add {plan.routed_vm_ip}/{svi.address.split('/')[1]} dev {c2_intf}; "
        f"ip link set {c2_intf} up; ip route replace default via {svi.address.split('/')[0]}"
    )
    if svi.address6:
        # Dual-stack: c2's IPv6 address in FRR's own subnet, its gateway FRR's
        # SVI. A host: it does not forward IPv6, or its neighbour adverts
        # would carry the router flag, FRR its MAC+IPv6 route the ND extended
        # community, and GoBGP would take that route as withdrawn (docs/evpn.md).
        length6 = svi.address6.split("/")[1]
        c2.cmd(
            "sysctl -qw net.ipv6.conf.all.disable_ipv6=0 net.ipv6.conf.all.forwarding=0 "
            f"net.ipv6.conf.{c2_intf}.disable_ipv6=0 net.ipv6.conf.{c2_intf}.accept_ra=0; "
            f"ip -6 addr add {plan.routed_vm_ip6}/{length6} dev {c2_intf} nodad; "
            f"ip -6 route replace default via {svi.address6.split('/')[0]} dev {c2_intf}"
        )
    # The BGP session's link: one end in the root namespace, where the
    # controller (and its speaker) runs.
    subprocess.run(["ip", "link", "del", plan.mgmt_ctl_intf], capture_output=True, check=False)
    subprocess.run(
        [
            "ip", "link", "add", plan.mgmt_ctl_intf, "type", "veth",
            "peer", "name", "mgmt0", "netns", str(host.pid),
        ],
        check=True,
    )  # fmt: skip
    subprocess.run(
        ["ip", "addr", "add", f"{plan.mgmt_ctl_ip}/30", "dev", plan.mgmt_ctl_intf], check=True
    )
    subprocess.run(["ip", "link", "set", plan.mgmt_ctl_intf, "up"], check=True)
    host.cmd(f"ip addr add {plan.mgmt_frr_ip}/30 dev mgmt0; ip link set mgmt0 up")


def remove_frr_host_link(plan: FrrHostPlan) -> None:
    """What is not Mininet's: the management link (both ends go), the VRF's
    namespace (its devices go with it; FRR stopped first) and the name of
    frr1's namespace."""
    subprocess.run(["ip", "link", "del", plan.mgmt_ctl_intf], capture_output=True, check=False)
    for ns in (plan.vrf_netns, plan.netns):
        run("ip", "netns", "del", ns, check=False)


def vf_file(layout: LeafSpine, server: str) -> Path:
    return layout.run_dir / f"{server}-vfs.json"


def write_vfs(layout: LeafSpine, server: str) -> None:
    """The VFs of one server (port -> VLAN), as its NIC process reads them."""
    vfs = {layout.vm_port[vm.name]: vm.vlan for vm in layout.vms.values() if vm.server == server}
    for vm in layout.vms.values():
        if vm.server == server:
            layout.net.get(server).cmd(f"ip link set {layout.vm_port[vm.name]} up")
    tmp = vf_file(layout, server).with_suffix(".tmp")
    tmp.write_text(json.dumps(vfs))
    tmp.replace(vf_file(layout, server))


def stop_nics(layout: LeafSpine) -> None:
    stop_processes(layout.nics.values(), timeout=5)


def move_vm(layout: LeafSpine, name: str, server: str, vlan: int) -> None:
    """Live-move a VM's vNIC to another server's VF: what a migration does to
    the network. The VM keeps its MAC and IP."""
    old = layout.vms[name]
    vm_host = layout.vm(name)
    old_intf = vm_host.intfList()[-1].name
    link = layout.net.addLink(vm_host, layout.net.get(server), addr1=old.mac)
    new_intf = link.intf1.name
    moved = replace(old, server=server, vlan=vlan)
    layout.vms[name] = moved
    layout.vm_port[name] = link.intf2.name
    for intf in (link.intf1, link.intf2):
        intf.node.cmd(
            f"ethtool -K {intf.name} tx off rx off tso off gso off gro off "
            "rxvlan off txvlan off >/dev/null 2>&1"
        )
    write_vfs(layout, server)
    write_vfs(layout, old.server)
    # The switch-over: the old vNIC goes down, the new one takes the address.
    v6 = static_ipv6_addresses(layout, old)
    vm_host.cmd(
        f"ip link set {old_intf} down; ip addr flush dev {old_intf}; "
        f"ip addr add {old.ips[0]}/{SUBNET_PREFIX} dev {new_intf}; "
        + (
            f"sysctl -qw {ipv6_sysctls(layout, old, new_intf)}; "
            if ipv6_addresses(layout, old)
            else ""
        )
        # (nodad: the address moves with the VM, it is no new claim)
        + "".join(f"ip -6 addr add {address} dev {new_intf} nodad; " for address in v6)
        + f"ip link set {new_intf} up"
    )
    set_gateway(layout, moved, new_intf)


def set_gateway(layout: LeafSpine, vm: Vm, intf: str) -> None:
    """A VM of a routed VNI sends off-subnet traffic to its subnet's gateway, the
    anycast gateway every ToR answers for (docs/routing.md); IPv6 through the
    gateway's link-local address, as a router advertisement would say."""
    ip = ipaddress.ip_address(vm.ips[0])
    for subnet in layout.fabric.vnis[vm.vni].subnets:
        if ip in ipaddress.ip_network(subnet.prefix):
            layout.vm(vm.name).cmd(f"ip route replace default via {subnet.gateway} dev {intf}")
    if (
        static_ipv6_addresses(layout, vm)
        and not slaac_addresses(layout, vm)
        and layout.fabric.anycast_gateway_mac is not None
    ):
        lla = link_local(layout.fabric.anycast_gateway_mac)
        layout.vm(vm.name).cmd(f"ip -6 route replace default via {lla} dev {intf}")


def ipv6_addresses(layout: LeafSpine, vm: Vm) -> list[str]:
    """``vm``'s IPv6 addresses with their subnet's prefix length (address/len)."""
    subnets = [ipaddress.ip_network(s.prefix) for s in layout.fabric.vnis[vm.vni].subnets]
    out = []
    for text in vm.ips:
        ip = ipaddress.ip_address(text)
        if ip.version == 6:
            length = next((n.prefixlen for n in subnets if ip in n), 64)
            out.append(f"{ip}/{length}")
    return out


def slaac_addresses(layout: LeafSpine, vm: Vm) -> list[str]:
    """The addresses ``vm`` forms itself from router advertisements: its
    EUI-64 address in each SLAAC subnet (``slaac: true``) of its VNI, when
    its ``ips`` list it (as port security asks: docs/security.md)."""
    out = []
    for subnet in layout.fabric.vnis[vm.vni].subnets:
        network = ipaddress.ip_network(subnet.prefix)
        if subnet.slaac and network.version == 6 and network.prefixlen == 64:
            formed = eui64_address(network, vm.mac)
            if formed in vm.ips:
                out.append(formed)
    return out


def static_ipv6_addresses(layout: LeafSpine, vm: Vm) -> list[str]:
    """``vm``'s IPv6 addresses the demo configures (address/len): all but
    those it forms with SLAAC."""
    formed = set(slaac_addresses(layout, vm))
    return [a for a in ipv6_addresses(layout, vm) if a.split("/")[0] not in formed]


def ipv6_sysctls(layout: LeafSpine, vm: Vm, intf: str) -> str:
    """The sysctl settings that turn IPv6 on for ``vm`` on ``intf``. A VM
    with static addresses ignores router advertisements (its default route
    is set: set_gateway); a SLAAC VM takes its address and default route
    from them, with EUI-64 interface ids (the address its ``ips`` list) and
    no temporary addresses. Its own settings come before disable_ipv6=0:
    the link-local address (and its interface id) is formed then, and the
    router solicitations are sent once it has passed DAD."""
    conf = f"net.ipv6.conf.{intf}"
    if slaac_addresses(layout, vm):
        own = f"{conf}.addr_gen_mode=0 {conf}.use_tempaddr=0 {conf}.autoconf=1 {conf}.accept_ra=1"
    else:
        own = f"{conf}.accept_ra=0"
    return f"{own} {conf}.disable_ipv6=0 net.ipv6.conf.all.disable_ipv6=0"


def subnet_of(vm: Vm) -> ipaddress.IPv4Network:
    return ipaddress.ip_network(f"{vm.ips[0]}/{SUBNET_PREFIX}", strict=False)
