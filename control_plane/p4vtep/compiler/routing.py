"""Builder: routing between a tenant's subnets (symmetric IRB, docs/routing.md).

A ToR holds a VRF when it hosts a VM of one of the VRF's routed VNIs. Then it
holds, per routed VNI it hosts, the anycast gateway (the gateway MAC routed,
its IPs answered for ARP or ND and echo); per VRF, the L3 VNI (decapsulated and
routed when sent to this ToR's router MAC) and the static routes; and per VM
of the VRF, wherever it runs, a host route for each of its IPs: to its VF
here, or over the L3 VNI to its ToR's router MAC.

IPv4 and IPv6 are alike (the entry builders pick the IPv6 tables by the
address's family), but for the gateway's link-local address (``gateway_lla``):
answered by ND in each routed VNI with an IPv6 subnet, and one gateway entry
per VRF with one (the host table is per VRF, the address the same in every VNI).

The switch's VRF id is the VRF's L3 VNI: unique, and the same on every ToR and
across restarts, so no index is allocated for it.

Routes learned through EVPN (``Learned.hosts``, ``Learned.prefixes``) are
held with the VRF, towards their external VTEP's router MAC. Ours win, and
a host route goes with its MAC:

- a VM of ours whose MAC a remote VTEP won (``Learned.takes``: it moved
  away) has no host routes; the remote winner's host routes are installed
  instead, in the same commit as its MAC entry;
- a learned host route is left out for a gateway IP, and for an IP a VM of
  ours in the VRF has (unless that VM moved away);
- a static route whose next hop's VM moved away follows the learned host
  route of that IP, or is inactive without one;
- a learned prefix is left out where a static route of the VRF for the same
  prefix is installed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..dataplane.entries import LocalVmHop, RemoteVtepHop, RouteHop, is_ipv6
from ..model.addressing import ip_network, link_local
from ..model.allocation import Allocations
from ..model.fabric import Fabric, Vm, Vrf
from . import local_vm
from .encode import Encoder
from .learned import NOTHING, Learned, LearnedHost, LearnedPrefix
from .switch_state import Encoded

TRAFFIC_CLASS_L3VNI = 0  # routed frames keep the class their sender's VNI gave them


def vrf_of(fabric: Fabric, vni: int) -> Vrf | None:
    """The VRF a VNI is routed in; None for an L2-only VNI."""
    spec = fabric.vnis.get(vni)
    if spec is None or spec.vrf is None:
        return None
    return fabric.vrfs[spec.vrf]


def vrfs_of(fabric: Fabric, vnis: Iterable[int]) -> set[str]:
    """The VRFs a ToR hosting these VNIs holds."""
    return {vrf.name for vni in vnis if (vrf := vrf_of(fabric, vni)) is not None}


def vnis_of(fabric: Fabric, vrf_name: str) -> list[int]:
    return sorted(v.vni for v in fabric.vnis.values() if v.vrf == vrf_name)


def _anycast_mac(fabric: Fabric) -> str:
    # (validation requires it as soon as one VNI is routed)
    assert fabric.anycast_gateway_mac is not None, "routed VNI without anycast_gateway_mac"
    return fabric.anycast_gateway_mac


def gateway_lla(fabric: Fabric) -> str:
    """The gateway's IPv6 link-local address: the anycast MAC's."""
    return link_local(_anycast_mac(fabric))


def _has_ipv6(fabric: Fabric, vnis: Iterable[int]) -> bool:
    return any(is_ipv6(s.gateway) for vni in vnis for s in fabric.vnis[vni].subnets)


def vni_items(enc: Encoder, fabric: Fabric, vni: int) -> list[Encoded]:
    """A routed VNI hosted here: frames to the anycast MAC are routed, and each
    subnet's gateway IP is answered (ARP or ND with the anycast MAC, echo);
    with an IPv6 subnet, the gateway's link-local address too by ND (its
    echo: ``vrf_items``)."""
    vrf = vrf_of(fabric, vni)
    if vrf is None:
        return []
    anycast = _anycast_mac(fabric)
    # (kept encoded: rebuilt with the VNI's unit on every change of its members)
    out = [enc.kept(enc.entries.mac_to_router, vni, anycast, anycast)]
    for subnet in fabric.vnis[vni].subnets:
        out.append(enc.neighbour(vni, subnet.gateway, anycast, router=True))
        out.append(enc.kept(enc.entries.gateway_address, vrf.l3vni, subnet.gateway))
    if _has_ipv6(fabric, [vni]):
        out.append(enc.neighbour(vni, gateway_lla(fabric), anycast, router=True))
    return out


def hop_to(fabric: Fabric, tor_name: str, vm: Vm, alloc: Allocations) -> RouteHop:
    """Where this ToR sends what is routed to `vm`."""
    server = fabric.servers[vm.server]
    if server.tor == tor_name:
        index = alloc.vm[tor_name][vm.name]
        rx_policed = local_vm.policed(fabric, vm)[1]
        # (the VNI's MTU: IPv6 routed to the VM may not exceed it)
        mtu = fabric.vnis[vm.vni].router_advertisements.mtu
        return LocalVmHop(server.port, vm.vlan, index, alloc.vni[vm.vni], vm.mac, rx_policed, mtu)
    vrf = vrf_of(fabric, vm.vni)
    assert vrf is not None
    tor = fabric.tors[server.tor]
    return RemoteVtepHop(tor.vtep_ip, tor.router_mac, vrf.l3vni)


def learned_hop(route: LearnedHost | LearnedPrefix) -> RemoteVtepHop:
    return RemoteVtepHop(route.vtep, route.router_mac, route.vni)


def host_routes(
    enc: Encoder,
    fabric: Fabric,
    tor_name: str,
    vm: Vm,
    alloc: Allocations,
    learned: Learned = NOTHING,
) -> list[Encoded]:
    """One host route per IP of a VM of a routed VNI, for a ToR holding its
    VRF; none while a remote VTEP holds the VM's MAC (it moved away)."""
    vrf = vrf_of(fabric, vm.vni)
    if vrf is None or not vm.ips or learned.takes(vm.vni, vm.mac):
        return []
    hop = hop_to(fabric, tor_name, vm, alloc)
    return [enc.host_route(vrf.l3vni, ip, hop) for ip in vm.ips]


def gateways(fabric: Fabric, vrf_name: str) -> set[str]:
    """The gateway IPs of a VRF's subnets, and with an IPv6 subnet the
    gateway's link-local address (answered by the ToRs themselves)."""
    vnis = vnis_of(fabric, vrf_name)
    ips = {s.gateway for vni in vnis for s in fabric.vnis[vni].subnets}
    if _has_ipv6(fabric, vnis):
        ips.add(gateway_lla(fabric))
    return ips


def vrf_items(
    enc: Encoder,
    fabric: Fabric,
    tor_name: str,
    vrf_name: str,
    alloc: Allocations,
    owners: Mapping[str, Vm],
    learned: Learned = NOTHING,
    learned_hosts: bool = True,
) -> list[Encoded]:
    """A VRF this ToR holds: its L3 VNI, its static routes towards the VM
    that owns each next hop (`owners`: the VRF's VMs by IP, as this ToR sees
    them; a route whose next hop no VM owns now is left out), and the
    routes learned into it (see the module's rules). ``learned_hosts``
    False: without the learned host routes (``learned_host_route`` each)."""
    vrf = fabric.vrfs[vrf_name]
    rmac = fabric.tors[tor_name].router_mac
    out = [
        enc.of(enc.entries.l3vni_config(vrf.l3vni, 0, TRAFFIC_CLASS_L3VNI)),
        enc.of(enc.entries.mac_to_router(vrf.l3vni, rmac, _anycast_mac(fabric))),
    ]
    if _has_ipv6(fabric, vnis_of(fabric, vrf_name)):  # (once per VRF: see the module)
        out.append(enc.of(enc.entries.gateway_address(vrf.l3vni, gateway_lla(fabric))))
    hosts = learned.hosts.get(vrf_name, {})
    static: set[str] = set()
    for route in vrf.routes:
        owner = owners.get(route.next_hop)
        if owner is None:
            continue
        net = ip_network(route.prefix)
        hop: RouteHop
        if learned.takes(owner.vni, owner.mac):  # (the next hop's VM moved away: follow it)
            moved = hosts.get(route.next_hop)
            if moved is None:
                continue
            hop = learned_hop(moved)
        else:
            hop = hop_to(fabric, tor_name, owner, alloc)
        static.add(str(net))
        out.append(
            enc.of(
                enc.entries.prefix_route(vrf.l3vni, str(net.network_address), net.prefixlen, hop)
            )
        )
    for prefix in sorted(learned.prefixes.get(vrf_name, {})):
        if prefix in static:
            continue  # (our static route for the same prefix wins)
        remote = learned.prefixes[vrf_name][prefix]
        net = ip_network(prefix)
        out.append(
            enc.of(
                enc.entries.prefix_route(
                    vrf.l3vni, str(net.network_address), net.prefixlen, learned_hop(remote)
                )
            )
        )
    if hosts and learned_hosts:
        ours = gateways(fabric, vrf_name)
        for ip in sorted(hosts):
            item = learned_host_route(enc, vrf.l3vni, hosts[ip], owners.get(ip), learned, ours)
            if item is not None:
                out.append(item)
    return out


def learned_host_route(
    enc: Encoder,
    l3vni: int,
    host: LearnedHost,
    owner: Vm | None,
    learned: Learned,
    gateway_ips: set[str],
) -> Encoded | None:
    """The learned host route of one IP of a VRF (``owner``: the VRF's VM
    with that IP, as the ToR sees it), or None where the VRF's own gateway
    or VM keeps the IP."""
    if host.ip in gateway_ips or (owner is not None and not learned.takes(owner.vni, owner.mac)):
        return None
    return enc.host_route(l3vni, host.ip, learned_hop(host))


def ip_owners(vms: Iterable[Vm]) -> dict[str, Vm]:
    return {ip: vm for vm in vms for ip in vm.ips}
