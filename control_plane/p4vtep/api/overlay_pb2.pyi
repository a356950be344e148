from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class VM(_message.Message):
    __slots__ = ("name", "mac", "ips", "vni", "server", "vlan", "qos", "source", "tor", "error", "port_security", "dhcp_server", "allowed_pairs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAC_FIELD_NUMBER: _ClassVar[int]
    IPS_FIELD_NUMBER: _ClassVar[int]
    VNI_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    VLAN_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TOR_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    PORT_SECURITY_FIELD_NUMBER: _ClassVar[int]
    DHCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_PAIRS_FIELD_NUMBER: _ClassVar[int]
    name: str
    mac: str
    ips: _containers.RepeatedScalarFieldContainer[str]
    vni: int
    server: str
    vlan: int
    qos: str
    source: str
    tor: str
    error: str
    port_security: bool
    dhcp_server: bool
    allowed_pairs: _containers.RepeatedCompositeFieldContainer[AllowedPair]
    def __init__(self, name: _Optional[str] = ..., mac: _Optional[str] = ..., ips: _Optional[_Iterable[str]] = ..., vni: _Optional[int] = ..., server: _Optional[str] = ..., vlan: _Optional[int] = ..., qos: _Optional[str] = ..., source: _Optional[str] = ..., tor: _Optional[str] = ..., error: _Optional[str] = ..., port_security: _Optional[bool] = ..., dhcp_server: _Optional[bool] = ..., allowed_pairs: _Optional[_Iterable[_Union[AllowedPair, _Mapping]]] = ...) -> None: ...

class AllowedPair(_message.Message):
    __slots__ = ("prefix", "mac")
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    MAC_FIELD_NUMBER: _ClassVar[int]
    prefix: str
    mac: str
    def __init__(self, prefix: _Optional[str] = ..., mac: _Optional[str] = ...) -> None: ...

class AttachVMRequest(_message.Message):
    __slots__ = ("vm", "wait")
    VM_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    vm: VM
    wait: bool
    def __init__(self, vm: _Optional[_Union[VM, _Mapping]] = ..., wait: _Optional[bool] = ...) -> None: ...

class VMResponse(_message.Message):
    __slots__ = ("vm", "version", "applied")
    VM_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    vm: VM
    version: int
    applied: bool
    def __init__(self, vm: _Optional[_Union[VM, _Mapping]] = ..., version: _Optional[int] = ..., applied: _Optional[bool] = ...) -> None: ...

class DetachVMRequest(_message.Message):
    __slots__ = ("name", "wait")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    wait: bool
    def __init__(self, name: _Optional[str] = ..., wait: _Optional[bool] = ...) -> None: ...

class DetachVMResponse(_message.Message):
    __slots__ = ("version", "applied")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    version: int
    applied: bool
    def __init__(self, version: _Optional[int] = ..., applied: _Optional[bool] = ...) -> None: ...

class MigrateVMRequest(_message.Message):
    __slots__ = ("name", "server", "vlan", "wait")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    VLAN_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    server: str
    vlan: int
    wait: bool
    def __init__(self, name: _Optional[str] = ..., server: _Optional[str] = ..., vlan: _Optional[int] = ..., wait: _Optional[bool] = ...) -> None: ...

class GetVMRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ListVMsRequest(_message.Message):
    __slots__ = ("vni", "server")
    VNI_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    vni: int
    server: str
    def __init__(self, vni: _Optional[int] = ..., server: _Optional[str] = ...) -> None: ...

class ListVMsResponse(_message.Message):
    __slots__ = ("vms",)
    VMS_FIELD_NUMBER: _ClassVar[int]
    vms: _containers.RepeatedCompositeFieldContainer[VM]
    def __init__(self, vms: _Optional[_Iterable[_Union[VM, _Mapping]]] = ...) -> None: ...

class SetQoSRequest(_message.Message):
    __slots__ = ("name", "qos")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    name: str
    qos: str
    def __init__(self, name: _Optional[str] = ..., qos: _Optional[str] = ...) -> None: ...

class SetPortSecurityRequest(_message.Message):
    __slots__ = ("name", "port_security", "dhcp_server", "clear_pairs", "remove_pairs", "add_pairs", "wait")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PORT_SECURITY_FIELD_NUMBER: _ClassVar[int]
    DHCP_SERVER_FIELD_NUMBER: _ClassVar[int]
    CLEAR_PAIRS_FIELD_NUMBER: _ClassVar[int]
    REMOVE_PAIRS_FIELD_NUMBER: _ClassVar[int]
    ADD_PAIRS_FIELD_NUMBER: _ClassVar[int]
    WAIT_FIELD_NUMBER: _ClassVar[int]
    name: str
    port_security: bool
    dhcp_server: bool
    clear_pairs: bool
    remove_pairs: _containers.RepeatedCompositeFieldContainer[AllowedPair]
    add_pairs: _containers.RepeatedCompositeFieldContainer[AllowedPair]
    wait: bool
    def __init__(self, name: _Optional[str] = ..., port_security: _Optional[bool] = ..., dhcp_server: _Optional[bool] = ..., clear_pairs: _Optional[bool] = ..., remove_pairs: _Optional[_Iterable[_Union[AllowedPair, _Mapping]]] = ..., add_pairs: _Optional[_Iterable[_Union[AllowedPair, _Mapping]]] = ..., wait: _Optional[bool] = ...) -> None: ...

class ListSwitchesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Switch(_message.Message):
    __slots__ = ("name", "address", "connected", "primary", "pipeline_cookie", "entries", "last_error", "reconciles", "writes", "vms_not_installed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    PIPELINE_COOKIE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    RECONCILES_FIELD_NUMBER: _ClassVar[int]
    WRITES_FIELD_NUMBER: _ClassVar[int]
    VMS_NOT_INSTALLED_FIELD_NUMBER: _ClassVar[int]
    name: str
    address: str
    connected: bool
    primary: bool
    pipeline_cookie: int
    entries: int
    last_error: str
    reconciles: int
    writes: int
    vms_not_installed: int
    def __init__(self, name: _Optional[str] = ..., address: _Optional[str] = ..., connected: _Optional[bool] = ..., primary: _Optional[bool] = ..., pipeline_cookie: _Optional[int] = ..., entries: _Optional[int] = ..., last_error: _Optional[str] = ..., reconciles: _Optional[int] = ..., writes: _Optional[int] = ..., vms_not_installed: _Optional[int] = ...) -> None: ...

class ListSwitchesResponse(_message.Message):
    __slots__ = ("switches",)
    SWITCHES_FIELD_NUMBER: _ClassVar[int]
    switches: _containers.RepeatedCompositeFieldContainer[Switch]
    def __init__(self, switches: _Optional[_Iterable[_Union[Switch, _Mapping]]] = ...) -> None: ...

class Traffic(_message.Message):
    __slots__ = ("packets", "bytes")
    PACKETS_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    packets: int
    bytes: int
    def __init__(self, packets: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class ColorCounters(_message.Message):
    __slots__ = ("green", "yellow", "red")
    GREEN_FIELD_NUMBER: _ClassVar[int]
    YELLOW_FIELD_NUMBER: _ClassVar[int]
    RED_FIELD_NUMBER: _ClassVar[int]
    green: Traffic
    yellow: Traffic
    red: Traffic
    def __init__(self, green: _Optional[_Union[Traffic, _Mapping]] = ..., yellow: _Optional[_Union[Traffic, _Mapping]] = ..., red: _Optional[_Union[Traffic, _Mapping]] = ...) -> None: ...

class VMCounters(_message.Message):
    __slots__ = ("name", "tor", "tx", "rx", "tx_colors", "rx_colors", "port_security_drops")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOR_FIELD_NUMBER: _ClassVar[int]
    TX_FIELD_NUMBER: _ClassVar[int]
    RX_FIELD_NUMBER: _ClassVar[int]
    TX_COLORS_FIELD_NUMBER: _ClassVar[int]
    RX_COLORS_FIELD_NUMBER: _ClassVar[int]
    PORT_SECURITY_DROPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    tor: str
    tx: Traffic
    rx: Traffic
    tx_colors: ColorCounters
    rx_colors: ColorCounters
    port_security_drops: _containers.RepeatedCompositeFieldContainer[PortSecurityDrops]
    def __init__(self, name: _Optional[str] = ..., tor: _Optional[str] = ..., tx: _Optional[_Union[Traffic, _Mapping]] = ..., rx: _Optional[_Union[Traffic, _Mapping]] = ..., tx_colors: _Optional[_Union[ColorCounters, _Mapping]] = ..., rx_colors: _Optional[_Union[ColorCounters, _Mapping]] = ..., port_security_drops: _Optional[_Iterable[_Union[PortSecurityDrops, _Mapping]]] = ...) -> None: ...

class PortSecurityDrops(_message.Message):
    __slots__ = ("reason", "dropped")
    REASON_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    reason: str
    dropped: Traffic
    def __init__(self, reason: _Optional[str] = ..., dropped: _Optional[_Union[Traffic, _Mapping]] = ...) -> None: ...

class VNICounters(_message.Message):
    __slots__ = ("vni", "tor", "tx", "rx")
    VNI_FIELD_NUMBER: _ClassVar[int]
    TOR_FIELD_NUMBER: _ClassVar[int]
    TX_FIELD_NUMBER: _ClassVar[int]
    RX_FIELD_NUMBER: _ClassVar[int]
    vni: int
    tor: str
    tx: Traffic
    rx: Traffic
    def __init__(self, vni: _Optional[int] = ..., tor: _Optional[str] = ..., tx: _Optional[_Union[Traffic, _Mapping]] = ..., rx: _Optional[_Union[Traffic, _Mapping]] = ...) -> None: ...

class DropCounter(_message.Message):
    __slots__ = ("tor", "reason", "packets")
    TOR_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PACKETS_FIELD_NUMBER: _ClassVar[int]
    tor: str
    reason: str
    packets: int
    def __init__(self, tor: _Optional[str] = ..., reason: _Optional[str] = ..., packets: _Optional[int] = ...) -> None: ...

class SwitchError(_message.Message):
    __slots__ = ("switch", "error")
    SWITCH_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    switch: str
    error: str
    def __init__(self, switch: _Optional[str] = ..., error: _Optional[str] = ...) -> None: ...

class GetCountersRequest(_message.Message):
    __slots__ = ("vms", "vnis")
    VMS_FIELD_NUMBER: _ClassVar[int]
    VNIS_FIELD_NUMBER: _ClassVar[int]
    vms: _containers.RepeatedScalarFieldContainer[str]
    vnis: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, vms: _Optional[_Iterable[str]] = ..., vnis: _Optional[_Iterable[int]] = ...) -> None: ...

class GetCountersResponse(_message.Message):
    __slots__ = ("vms", "vnis", "drops", "unreachable")
    VMS_FIELD_NUMBER: _ClassVar[int]
    VNIS_FIELD_NUMBER: _ClassVar[int]
    DROPS_FIELD_NUMBER: _ClassVar[int]
    UNREACHABLE_FIELD_NUMBER: _ClassVar[int]
    vms: _containers.RepeatedCompositeFieldContainer[VMCounters]
    vnis: _containers.RepeatedCompositeFieldContainer[VNICounters]
    drops: _containers.RepeatedCompositeFieldContainer[DropCounter]
    unreachable: _containers.RepeatedCompositeFieldContainer[SwitchError]
    def __init__(self, vms: _Optional[_Iterable[_Union[VMCounters, _Mapping]]] = ..., vnis: _Optional[_Iterable[_Union[VNICounters, _Mapping]]] = ..., drops: _Optional[_Iterable[_Union[DropCounter, _Mapping]]] = ..., unreachable: _Optional[_Iterable[_Union[SwitchError, _Mapping]]] = ...) -> None: ...

class WatchEventsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Event(_message.Message):
    __slots__ = ("at", "switch", "kind", "detail")
    AT_FIELD_NUMBER: _ClassVar[int]
    SWITCH_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    at: float
    switch: str
    kind: str
    detail: str
    def __init__(self, at: _Optional[float] = ..., switch: _Optional[str] = ..., kind: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class EvpnPeersRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class EvpnPeer(_message.Message):
    __slots__ = ("address", "asn", "state", "uptime_seconds", "routes_received", "routes_accepted", "routes_advertised")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ASN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    UPTIME_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ROUTES_RECEIVED_FIELD_NUMBER: _ClassVar[int]
    ROUTES_ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    ROUTES_ADVERTISED_FIELD_NUMBER: _ClassVar[int]
    address: str
    asn: int
    state: str
    uptime_seconds: float
    routes_received: int
    routes_accepted: int
    routes_advertised: int
    def __init__(self, address: _Optional[str] = ..., asn: _Optional[int] = ..., state: _Optional[str] = ..., uptime_seconds: _Optional[float] = ..., routes_received: _Optional[int] = ..., routes_accepted: _Optional[int] = ..., routes_advertised: _Optional[int] = ...) -> None: ...

class EvpnRefusals(_message.Message):
    __slots__ = ("reason", "routes")
    REASON_FIELD_NUMBER: _ClassVar[int]
    ROUTES_FIELD_NUMBER: _ClassVar[int]
    reason: str
    routes: int
    def __init__(self, reason: _Optional[str] = ..., routes: _Optional[int] = ...) -> None: ...

class EvpnPeersResponse(_message.Message):
    __slots__ = ("asn", "router_id", "peers", "refused")
    ASN_FIELD_NUMBER: _ClassVar[int]
    ROUTER_ID_FIELD_NUMBER: _ClassVar[int]
    PEERS_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    asn: int
    router_id: str
    peers: _containers.RepeatedCompositeFieldContainer[EvpnPeer]
    refused: _containers.RepeatedCompositeFieldContainer[EvpnRefusals]
    def __init__(self, asn: _Optional[int] = ..., router_id: _Optional[str] = ..., peers: _Optional[_Iterable[_Union[EvpnPeer, _Mapping]]] = ..., refused: _Optional[_Iterable[_Union[EvpnRefusals, _Mapping]]] = ...) -> None: ...

class EvpnRoutesRequest(_message.Message):
    __slots__ = ("vni",)
    VNI_FIELD_NUMBER: _ClassVar[int]
    vni: int
    def __init__(self, vni: _Optional[int] = ...) -> None: ...

class EvpnRoute(_message.Message):
    __slots__ = ("type", "vni", "mac", "ips", "vtep", "sequence", "source", "rd", "installed", "refused", "vrf", "l3vni", "router_mac")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    VNI_FIELD_NUMBER: _ClassVar[int]
    MAC_FIELD_NUMBER: _ClassVar[int]
    IPS_FIELD_NUMBER: _ClassVar[int]
    VTEP_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    RD_FIELD_NUMBER: _ClassVar[int]
    INSTALLED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    VRF_FIELD_NUMBER: _ClassVar[int]
    L3VNI_FIELD_NUMBER: _ClassVar[int]
    ROUTER_MAC_FIELD_NUMBER: _ClassVar[int]
    type: int
    vni: int
    mac: str
    ips: _containers.RepeatedScalarFieldContainer[str]
    vtep: str
    sequence: int
    source: str
    rd: str
    installed: bool
    refused: str
    vrf: str
    l3vni: int
    router_mac: str
    def __init__(self, type: _Optional[int] = ..., vni: _Optional[int] = ..., mac: _Optional[str] = ..., ips: _Optional[_Iterable[str]] = ..., vtep: _Optional[str] = ..., sequence: _Optional[int] = ..., source: _Optional[str] = ..., rd: _Optional[str] = ..., installed: _Optional[bool] = ..., refused: _Optional[str] = ..., vrf: _Optional[str] = ..., l3vni: _Optional[int] = ..., router_mac: _Optional[str] = ...) -> None: ...

class EvpnRoutesResponse(_message.Message):
    __slots__ = ("routes",)
    ROUTES_FIELD_NUMBER: _ClassVar[int]
    routes: _containers.RepeatedCompositeFieldContainer[EvpnRoute]
    def __init__(self, routes: _Optional[_Iterable[_Union[EvpnRoute, _Mapping]]] = ...) -> None: ...

class ListVrfsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Vrf(_message.Message):
    __slots__ = ("name", "l3vni", "vnis", "subnets", "tors", "vms")
    NAME_FIELD_NUMBER: _ClassVar[int]
    L3VNI_FIELD_NUMBER: _ClassVar[int]
    VNIS_FIELD_NUMBER: _ClassVar[int]
    SUBNETS_FIELD_NUMBER: _ClassVar[int]
    TORS_FIELD_NUMBER: _ClassVar[int]
    VMS_FIELD_NUMBER: _ClassVar[int]
    name: str
    l3vni: int
    vnis: _containers.RepeatedScalarFieldContainer[int]
    subnets: _containers.RepeatedScalarFieldContainer[str]
    tors: _containers.RepeatedScalarFieldContainer[str]
    vms: int
    def __init__(self, name: _Optional[str] = ..., l3vni: _Optional[int] = ..., vnis: _Optional[_Iterable[int]] = ..., subnets: _Optional[_Iterable[str]] = ..., tors: _Optional[_Iterable[str]] = ..., vms: _Optional[int] = ...) -> None: ...

class ListVrfsResponse(_message.Message):
    __slots__ = ("vrfs",)
    VRFS_FIELD_NUMBER: _ClassVar[int]
    vrfs: _containers.RepeatedCompositeFieldContainer[Vrf]
    def __init__(self, vrfs: _Optional[_Iterable[_Union[Vrf, _Mapping]]] = ...) -> None: ...

class ListRoutesRequest(_message.Message):
    __slots__ = ("vrf",)
    VRF_FIELD_NUMBER: _ClassVar[int]
    vrf: str
    def __init__(self, vrf: _Optional[str] = ...) -> None: ...

class Route(_message.Message):
    __slots__ = ("vrf", "prefix", "kind", "vm", "vni", "tor", "vtep", "next_hop")
    VRF_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VM_FIELD_NUMBER: _ClassVar[int]
    VNI_FIELD_NUMBER: _ClassVar[int]
    TOR_FIELD_NUMBER: _ClassVar[int]
    VTEP_FIELD_NUMBER: _ClassVar[int]
    NEXT_HOP_FIELD_NUMBER: _ClassVar[int]
    vrf: str
    prefix: str
    kind: str
    vm: str
    vni: int
    tor: str
    vtep: str
    next_hop: str
    def __init__(self, vrf: _Optional[str] = ..., prefix: _Optional[str] = ..., kind: _Optional[str] = ..., vm: _Optional[str] = ..., vni: _Optional[int] = ..., tor: _Optional[str] = ..., vtep: _Optional[str] = ..., next_hop: _Optional[str] = ...) -> None: ...

class ListRoutesResponse(_message.Message):
    __slots__ = ("routes",)
    ROUTES_FIELD_NUMBER: _ClassVar[int]
    routes: _containers.RepeatedCompositeFieldContainer[Route]
    def __init__(self, routes: _Optional[_Iterable[_Union[Route, _Mapping]]] = ...) -> None: ...
