"""The fabric and the VMs on it: the controller's desired state, as plain data."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar, cast

from ..dataplane.packet_io import PuntClass as PuntClass  # (the copp: keys)

if TYPE_CHECKING:
    from ..evpn.config import EvpnConfig


@dataclass(frozen=True)
class Uplink:
    port: int
    next_hop_mac: str


@dataclass(frozen=True)
class Tor:
    name: str
    address: str  # P4Runtime gRPC address
    device_id: int
    vtep_ip: str
    router_mac: str
    uplinks: tuple[Uplink, ...]
    # What the switch serves P4Runtime with (`p4vtep switch run`); None: plaintext.
    tls: TlsFiles | None = None
    target: str = "bmv2"  # bmv2 | tofino | tofino2 (dataplane/targets.py)
    # BMv2's Thrift port (queue rates: queue_rates.py); None: 9089 + device_id.
    thrift_port: int | None = None


@dataclass(frozen=True)
class Server:
    name: str
    tor: str
    port: int  # the ToR port the server's NIC is cabled to
    libvirt: str | None = None  # hypervisor URI, if its VMs come from libvirt
    # The NIC's speed in bit/s, if given: its VMs' guaranteed rates (QoS CIR)
    # may not add up to more, in either direction (validation.py).
    link_rate: int | None = None


@dataclass(frozen=True)
class Subnet:
    """An IPv4 or IPv6 subnet of a routed VNI and its anycast gateway IP (the
    same on every ToR, answered with the fabric's anycast_gateway_mac). A VNI
    may hold subnets of both families. IPv6 text is canonical (RFC 5952),
    as everywhere in the model (model/addressing.py)."""

    prefix: str  # e.g. "192.168.1.0/24", "2001:db8:1::/64"
    gateway: str  # a host address of prefix, of its family
    # IPv6 only, the flags of its prefix in the gateway's router
    # advertisements (RFC 4861 4.6.2; docs/routing.md#router-advertisements):
    # ``slaac`` is A (VMs may form addresses in it: off, since port security
    # drops addresses the controller does not know), ``on_link`` is L.
    slaac: bool = False
    on_link: bool = True


# What the gateway's router advertisements say by default (RFC 4861 6.2.1:
# MaxRtrAdvInterval 600 s, AdvDefaultLifetime 3 x that); the MTU option is
# the VF's: MAX_TENANT_FRAME in p4src/include/defines.p4 (9018) less the
# Ethernet header and the VF tag.
TENANT_MTU = 9000
RA_INTERVAL = 600
RA_LIFETIME = 1800


@dataclass(frozen=True)
class RouterAdvertisements:
    """A routed VNI's ``router_advertisements:`` (docs/routing.md): what every
    ToR hosting it advertises to its VMs as their IPv6 gateway."""

    enabled: bool = True  # (only a VNI with an IPv6 subnet advertises)
    interval: int = RA_INTERVAL  # MaxRtrAdvInterval, s: 4-1800 (min is a third)
    router_lifetime: int = RA_LIFETIME  # s: 0 (not a default router) or interval-9000
    mtu: int = TENANT_MTU  # the MTU option: 1280-9000
    managed: bool = False  # M: addresses from DHCPv6
    other: bool = False  # O: other configuration from DHCPv6


@dataclass(frozen=True)
class Vni:
    vni: int
    name: str
    traffic_class: int = 0
    flood: bool = True  # head-end replication of BUM; False drops BUM
    vrf: str | None = None  # the VRF it is routed in; None: L2 only
    subnets: tuple[Subnet, ...] = ()  # only on a routed VNI (docs/routing.md)
    router_advertisements: RouterAdvertisements = RouterAdvertisements()


@dataclass(frozen=True)
class StaticRoute:
    prefix: str  # IPv4 or IPv6 network, e.g. "0.0.0.0/0", "::/0"
    next_hop: str  # an IP of a VM of the VRF, of the prefix's family


@dataclass(frozen=True)
class Vrf:
    """A tenant's IP VRF: its routed VNIs name it; between ToRs its routed
    traffic travels in the L3 VNI (symmetric IRB)."""

    name: str
    l3vni: int
    routes: tuple[StaticRoute, ...] = ()


def punt_class_key(punt_class: PuntClass) -> str:
    """A punt class's name in the fabric file (``copp:``) and in metrics labels."""
    return punt_class.name.lower()


@dataclass(frozen=True)
class CoppRate:
    """The CoPP meter of one punt class: packets/s and a burst in packets."""

    pps: int
    burst: int


# Each class's CoPP rate unless the fabric file's ``copp:`` says otherwise
# (docs/routing.md#copp): what one ToR may hand the controller per class.
DEFAULT_COPP = {
    PuntClass.L2_TRAP: CoppRate(100, 50),
    PuntClass.TTL_EXPIRED: CoppRate(100, 50),
    PuntClass.NO_ROUTE: CoppRate(100, 50),
    PuntClass.TO_GATEWAY: CoppRate(100, 50),
    PuntClass.ROUTER_SOLICITATION: CoppRate(50, 25),
    PuntClass.PACKET_TOO_BIG: CoppRate(100, 50),
}


@dataclass(frozen=True)
class Rates:
    """RFC 2698 trTCM: committed/peak rate in bytes/s, bursts in bytes."""

    cir: int
    cburst: int
    pir: int
    pburst: int


@dataclass(frozen=True)
class QosPolicy:
    name: str
    tx: Rates | None = None  # what the VM sends
    rx: Rates | None = None  # what is delivered to the VM


@dataclass(frozen=True)
class AllowedPair:
    """An allowed address pair (Neutron's name; docs/security.md): a prefix
    the VM may send from and answer ARP/ND for besides its own addresses
    (a VRRP virtual IP, the networks a NAT appliance forwards for), and
    optionally a MAC it may send from besides its own (a VRRP virtual MAC)."""

    prefix: str  # IPv4 a.b.c.d/len or IPv6 (RFC 5952) address/len; any length
    mac: str | None = None  # normalised (lower case, colons)

    def __str__(self) -> str:
        """``PREFIX`` or ``PREFIX,MAC``: what the CLI and the inputs take."""
        return self.prefix if self.mac is None else f"{self.prefix},{self.mac}"


@dataclass(frozen=True, slots=True)
class Vm:
    name: str
    mac: str
    ips: tuple[str, ...]  # IPv4 and IPv6 (canonical), at most 8 of each (addressing.py)
    vni: int
    server: str
    vlan: int  # VF VLAN
    qos: str | None = None
    source: str = "inventory"  # which input declared it (inventory, libvirt, api)
    # Port security (docs/security.md): the ToR drops what the VM sends from
    # an address that is not its own (IP source guard, ARP and ND checks),
    # its router advertisements and, unless ``dhcp_server``, its DHCP server
    # messages. False: only the source MAC check (a trusted appliance).
    port_security: bool = True
    dhcp_server: bool = False  # may send DHCPv4/DHCPv6 server messages
    allowed_pairs: tuple[AllowedPair, ...] = ()  # at most 8 (model/port_security.py)

    def __post_init__(self) -> None:
        for name in SHARED_FIELDS:
            value = getattr(self, name)
            one = shared(value)
            if one is not value:
                object.__setattr__(self, name, one)


# Fields whose values many VMs have in common (a few hundred servers, VNIs,
# VLANs, policies): each VM refers to one object per value (``shared``)
# instead of its own copy, as a VM read from a file, the store or the API
# would hold (about 100 bytes a VM: 10 MiB for 100,000 VMs).
SHARED_FIELDS = ("vni", "server", "vlan", "qos", "source")
_SHARED_INTS: dict[int, int] = {}
SHARED_INTS_MAX = 1 << 16  # (emptied when full: VNIs and VLANs fit; refused values do not pile up)
T = TypeVar("T")


def shared(value: T) -> T:
    """The one object kept for a string or an integer equal to ``value``
    (anything else as it is)."""
    if isinstance(value, str) and type(value) is str:  # (not a subclass: sys.intern)
        return cast(T, sys.intern(value))
    if isinstance(value, int) and type(value) is int:  # (not a bool)
        ints = _SHARED_INTS
        one = ints.get(value)
        if one is None:
            if len(ints) >= SHARED_INTS_MAX:
                ints.clear()
            one = ints[value] = value
        return cast(T, one)
    return value


@dataclass(frozen=True)
class TlsFiles:
    """PEM files for one side of a mutually authenticated TLS connection."""

    ca: str  # verifies the peer
    cert: str  # our certificate (chain)
    key: str  # our private key

    def read(self) -> tuple[bytes, bytes, bytes]:
        from pathlib import Path

        ca, cert, key = (Path(p).read_bytes() for p in (self.ca, self.cert, self.key))
        return ca, cert, key


@dataclass
class Fabric:
    tors: dict[str, Tor] = field(default_factory=dict)
    servers: dict[str, Server] = field(default_factory=dict)
    vnis: dict[int, Vni] = field(default_factory=dict)
    policies: dict[str, QosPolicy] = field(default_factory=dict)
    p4runtime_tls: TlsFiles | None = None  # controller -> switches, client certificate
    api_tls: TlsFiles | None = None  # service API, requires client certificates
    evpn: EvpnConfig | None = None  # the fabric file's evpn: section (BGP EVPN), if any
    # Routing (docs/routing.md): VRFs by name, and the one gateway MAC every
    # ToR answers for every routed subnet's gateway IP. Each ToR's router_mac
    # is its router MAC (RMAC) for every VRF.
    vrfs: dict[str, Vrf] = field(default_factory=dict)
    anycast_gateway_mac: str | None = None
    # The CPU path (docs/routing.md#the-cpu-path): each punt class's CoPP rate.
    copp: dict[PuntClass, CoppRate] = field(default_factory=lambda: dict(DEFAULT_COPP))

    def tor_of(self, vm: Vm) -> Tor:
        return self.tors[self.servers[vm.server].tor]
