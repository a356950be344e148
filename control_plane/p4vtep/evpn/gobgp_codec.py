"""Routes to and from GoBGP's API paths (GoBGP v3 ``apipb.Path``).

The message classes come from GoBGP's own protos, compiled at install time
(``make deps``; see gobgp_api.py): nothing of GoBGP is kept in this tree.
"""

from __future__ import annotations

import functools
import ipaddress
from typing import Any

from . import gobgp_api
from .routes import (
    SINGLE_HOMED_ESI,
    EvpnRoute,
    InclusiveMulticastRoute,
    IpPrefixRoute,
    MacIpRoute,
    RouteError,
    canonical_ip,
    canonical_mac,
    canonical_rd,
    canonical_rt,
    canonical_vtep,
    check_vni,
    mac_ip_route,
    parse_admin_value,
)

EC_SUBTYPE_ROUTE_TARGET = 0x02  # RFC 4360 / RFC 5668 sub-type
TUNNEL_TYPE_VXLAN = 8  # RFC 9012 / RFC 8365 5.1.3 encapsulation extended community
PMSI_INGRESS_REPLICATION = 6  # RFC 6514 5
ORIGIN_IGP = 0


def _any(message: Any) -> Any:
    wrapped = gobgp_api.any_pb2.Any()
    wrapped.Pack(message)
    return wrapped


def _type_name(wrapped: Any) -> str:
    url = wrapped.type_url
    name = _TYPE_NAMES.get(url)
    if name is None:
        name = _remember(_TYPE_NAMES, url, str(url).rpartition(".")[2])
    return name


def _unpack(wrapped: Any, cls: Any) -> Any:
    # (Any.Unpack, without its descriptor lookups: a received route has a
    # dozen of these)
    if _type_name(wrapped) != cls.__name__:
        raise RouteError(f"expected {cls.__name__}, got {wrapped.type_url}")
    return cls.FromString(wrapped.value)


# Decoded extended communities by their encoding: a peer's routes share
# theirs (route targets, router MAC, encapsulation), so most are decoded once.
_COMMUNITIES: dict[bytes, tuple[tuple[str, ...], int, bool, str | None]] = {}
_COMMUNITIES_MAX = 4096
# The same for a path's next hop and a route's RD: every path of one UPDATE
# carries the message's whole MP_REACH_NLRI (all its routes), and a peer's
# routes share their RD.
_NEXT_HOPS: dict[bytes, str] = {}
_TYPE_NAMES: dict[str, str] = {}  # type URL -> message name
_RDS: dict[tuple[str, bytes], str] = {}


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> Any:
    if len(cache) >= _COMMUNITIES_MAX:
        cache.clear()  # (bounded: started again when full)
    cache[key] = value
    return value


def evpn_family() -> Any:
    api = gobgp_api.gobgp_pb2
    return api.Family(afi=api.Family.AFI_L2VPN, safi=api.Family.SAFI_EVPN)


# ---- encoding ---------------------------------------------------------------


def _rd(text: str) -> Any:
    attr = gobgp_api.attribute_pb2
    value = parse_admin_value(text, "route distinguisher")
    if value.kind == 0:
        return _any(
            attr.RouteDistinguisherTwoOctetASN(admin=int(value.admin), assigned=value.assigned)
        )
    if value.kind == 1:
        return _any(attr.RouteDistinguisherIPAddress(admin=value.admin, assigned=value.assigned))
    return _any(
        attr.RouteDistinguisherFourOctetASN(admin=int(value.admin), assigned=value.assigned)
    )


def _route_target(text: str) -> Any:
    attr = gobgp_api.attribute_pb2
    value = parse_admin_value(text, "route target")
    common = {
        "is_transitive": True,
        "sub_type": EC_SUBTYPE_ROUTE_TARGET,
        "local_admin": value.assigned,
    }
    if value.kind == 0:
        return _any(attr.TwoOctetAsSpecificExtended(asn=int(value.admin), **common))
    if value.kind == 1:
        return _any(attr.IPv4AddressSpecificExtended(address=value.admin, **common))
    return _any(attr.FourOctetAsSpecificExtended(asn=int(value.admin), **common))


def _esi(text: str) -> Any:
    raw = bytes(int(b, 16) for b in text.split(":"))
    return gobgp_api.attribute_pb2.EthernetSegmentIdentifier(type=raw[0], value=raw[1:])


def unset_gateway(route: IpPrefixRoute) -> str:
    """The gateway IP of an interface-less type 5 (RFC 9136 4.4.1: zero), in
    the prefix's family: "0.0.0.0" beside an IPv4 prefix, "::" beside an
    IPv6 one. Never "0.0.0.0" beside an IPv6 prefix: GoBGP parses the text
    with ``net.ParseIP``, which gives the 16-byte ``::ffff:0.0.0.0``, and
    ``EVPNIPPrefixRoute.Serialize`` writes ``To16()`` of it beside an IPv6
    prefix: a gateway IP that is not zero, i.e. an overlay index (GoBGP 3.10,
    pkg/packet/bgp/bgp.go). ("::" is 16 zero bytes; an empty text is nil,
    which GoBGP serialises as ``net.IPv6zero``, the same bytes.)"""
    return "0.0.0.0" if route.ipv4 else "::"


def encode(route: EvpnRoute) -> Any:
    """The ``apipb.Path`` that announces (AddPath) or withdraws (DeletePath) it."""
    api, attr = gobgp_api.gobgp_pb2, gobgp_api.attribute_pb2
    communities = [_route_target(rt) for rt in route.route_targets]
    communities.append(_any(attr.EncapExtended(tunnel_type=TUNNEL_TYPE_VXLAN)))
    if not isinstance(route, InclusiveMulticastRoute) and route.router_mac is not None:
        communities.append(_any(attr.RouterMacExtended(mac=route.router_mac)))
    pattrs = [_any(attr.OriginAttribute(origin=ORIGIN_IGP))]
    nlri: Any
    if isinstance(route, MacIpRoute):
        nlri = attr.EVPNMACIPAdvertisementRoute(
            rd=_rd(route.rd),
            esi=_esi(route.esi),
            ethernet_tag=route.ethernet_tag,
            mac_address=route.mac,
            ip_address=route.ip or "",
            labels=[route.vni] if route.l3vni is None else [route.vni, route.l3vni],
        )
        if route.mobility_seq or route.sticky:
            communities.append(
                _any(
                    attr.MacMobilityExtended(
                        sequence_num=route.mobility_seq, is_sticky=route.sticky
                    )
                )
            )
    elif isinstance(route, IpPrefixRoute):
        address, _, length = route.prefix.partition("/")
        nlri = attr.EVPNIPPrefixRoute(
            rd=_rd(route.rd),
            esi=_esi(route.esi),
            ethernet_tag=route.ethernet_tag,
            ip_prefix=address,
            ip_prefix_len=int(length),
            gw_address=route.gateway_ip or unset_gateway(route),
            label=route.l3vni,
        )
    else:
        nlri = attr.EVPNInclusiveMulticastEthernetTagRoute(
            rd=_rd(route.rd), ethernet_tag=route.ethernet_tag, ip_address=route.originator
        )
        pattrs.append(
            _any(
                attr.PmsiTunnelAttribute(
                    flags=0,
                    type=PMSI_INGRESS_REPLICATION,
                    label=route.vni,
                    id=ipaddress.IPv4Address(route.vtep).packed,
                )
            )
        )
    packed_nlri = _any(nlri)
    pattrs.append(
        _any(
            attr.MpReachNLRIAttribute(
                family=evpn_family(), next_hops=[route.next_hop], nlris=[packed_nlri]
            )
        )
    )
    pattrs.append(_any(attr.ExtendedCommunitiesAttribute(communities=communities)))
    return api.Path(nlri=packed_nlri, pattrs=pattrs, family=evpn_family())


# ---- decoding ---------------------------------------------------------------


def _decode_rd(wrapped: Any) -> str:
    attr = gobgp_api.attribute_pb2
    name = _type_name(wrapped)
    for cls in (
        attr.RouteDistinguisherTwoOctetASN,
        attr.RouteDistinguisherIPAddress,
        attr.RouteDistinguisherFourOctetASN,
    ):
        if name == cls.__name__:
            rd = _unpack(wrapped, cls)
            return f"{rd.admin}:{rd.assigned}"
    raise RouteError(f"unknown route distinguisher {wrapped.type_url}")


def _decode_esi(esi: Any) -> str:
    if not esi.type and not any(esi.value):
        return SINGLE_HOMED_ESI  # (single-homed: nearly every route)
    raw = bytes([esi.type]) + bytes(esi.value)
    if len(raw) == 1:
        raw += bytes(9)  # GoBGP leaves the value empty for ESI 0
    if len(raw) != 10:
        raise RouteError(f"ESI of {len(raw)} bytes")
    return ":".join(f"{b:02x}" for b in raw)


def decode_key(path: Any) -> tuple[object, ...] | None:
    """The NLRI key of an EVPN path, or None when it is a route type we do
    not use (1, 4: ignored, not refused)."""
    attr = gobgp_api.attribute_pb2
    name = _type_name(path.nlri)
    if name == attr.EVPNMACIPAdvertisementRoute.__name__:
        n = _unpack(path.nlri, attr.EVPNMACIPAdvertisementRoute)
        ip = _ip_or_none(n.ip_address)
        # (MacIpRoute.nlri_key of the route, its fields in MacIpRoute's forms)
        if not 0 <= n.ethernet_tag <= 0xFFFFFFFF:
            raise RouteError(f"Ethernet tag {n.ethernet_tag} is outside 32 bits")
        return (
            2,
            _cached_rd(n.rd),  # (the RD canonical once per distinct encoding, as decode)
            n.ethernet_tag,
            canonical_mac(n.mac_address),
            canonical_ip(ip) if ip is not None else None,
        )
    if name == attr.EVPNInclusiveMulticastEthernetTagRoute.__name__:
        n = _unpack(path.nlri, attr.EVPNInclusiveMulticastEthernetTagRoute)
        im = InclusiveMulticastRoute(
            rd=_decode_rd(n.rd),
            vni=1,
            originator=n.ip_address,
            next_hop="0.0.0.0",
            ethernet_tag=n.ethernet_tag,
        )
        return im.nlri_key()
    if name == attr.EVPNIPPrefixRoute.__name__:
        n = _unpack(path.nlri, attr.EVPNIPPrefixRoute)
        return _prefix_route(n, l3vni=1, next_hop="0.0.0.0").nlri_key()
    return None


def _prefix_route(n: Any, **fields: Any) -> IpPrefixRoute:
    return IpPrefixRoute(
        rd=_decode_rd(n.rd),
        prefix=f"{n.ip_prefix}/{n.ip_prefix_len}",
        ethernet_tag=n.ethernet_tag,
        esi=_decode_esi(n.esi) if n.HasField("esi") else SINGLE_HOMED_ESI,
        gateway_ip=_ip_or_none(n.gw_address),
        **fields,
    )


def _ip_or_none(text: str) -> str | None:
    # GoBGP renders an absent IP as "<nil>" (Go's nil net.IP), older ones as
    # "", a zero one as "0.0.0.0" or "::"; and the 16-byte ::ffff:0.0.0.0 as
    # "0.0.0.0" too (Go prints an IPv4-mapped address as its To4(): see
    # routes._gateway, which takes a type 5's gateway in its prefix's family).
    return text if text and text not in ("<nil>", "0.0.0.0", "::") else None


def _communities(
    communities: Any,
) -> tuple[tuple[str, ...], int, bool, str | None]:
    """(route targets, MAC mobility sequence, sticky, router MAC) of an
    ExtendedCommunitiesAttribute."""
    attr = gobgp_api.attribute_pb2
    targets: list[str] = []
    seq, sticky = 0, False
    router_mac: str | None = None
    for community in communities.communities:
        ckind = _type_name(community)
        if ckind == "TwoOctetAsSpecificExtended":
            c = _unpack(community, attr.TwoOctetAsSpecificExtended)
            if c.sub_type == EC_SUBTYPE_ROUTE_TARGET:
                targets.append(f"{c.asn}:{c.local_admin}")
        elif ckind == "FourOctetAsSpecificExtended":
            c = _unpack(community, attr.FourOctetAsSpecificExtended)
            if c.sub_type == EC_SUBTYPE_ROUTE_TARGET:
                targets.append(f"{c.asn}:{c.local_admin}")
        elif ckind == "IPv4AddressSpecificExtended":
            c = _unpack(community, attr.IPv4AddressSpecificExtended)
            if c.sub_type == EC_SUBTYPE_ROUTE_TARGET:
                targets.append(f"{c.address}:{c.local_admin}")
        elif ckind == "MacMobilityExtended":
            c = _unpack(community, attr.MacMobilityExtended)
            seq, sticky = c.sequence_num, c.is_sticky
        elif ckind == "RouterMacExtended":
            router_mac = _unpack(community, attr.RouterMacExtended).mac
    return tuple(targets), seq, sticky, router_mac


def _next_hop(wrapped: Any) -> str:
    value = wrapped.value
    hop = _NEXT_HOPS.get(value)
    if hop is None:
        hop = _remember(_NEXT_HOPS, value, _reach_next_hop(wrapped))
    return hop


def _reach_next_hop(wrapped: Any) -> str:
    """An MP_REACH_NLRI's next hop ("" when it has none)."""
    reach = _unpack(wrapped, gobgp_api.attribute_pb2.MpReachNLRIAttribute)
    return reach.next_hops[0] if reach.next_hops else ""


def _cached_rd(wrapped: Any) -> str:
    key = (wrapped.type_url, wrapped.value)
    rd = _RDS.get(key)
    if rd is None:
        rd = _remember(_RDS, key, canonical_rd(_decode_rd(wrapped)))
    return rd


_MAC_IP = "EVPNMACIPAdvertisementRoute"
# What a type 2 takes from a path's attributes, canonical: (next hop, route
# targets, MAC mobility sequence, sticky, router MAC), by the attributes'
# encodings. Every path of one UPDATE carries the same ones (its whole
# MP_REACH_NLRI among them) and a peer's UPDATEs mostly share them: looked
# up once per path instead of decoded and canonicalised field by field.
_TYPE2_ATTRIBUTES: dict[tuple[Any, ...], tuple[str, tuple[str, ...], int, bool, str | None]] = {}
_TYPE2_KINDS = frozenset({"NextHopAttribute", "ExtendedCommunitiesAttribute"})


def decode(path: Any) -> EvpnRoute | None:
    """A received (announced) path as a route; None for route types we do not
    use. Raises RouteError for a malformed one (the caller counts it)."""
    nlri = path.nlri
    name = _TYPE_NAMES.get(nlri.type_url) or _type_name(nlri)
    if name == _MAC_IP:
        return _decode_mac_ip(path, nlri)
    return _decode_other(path, name)


# The last type 2's attributes and what they gave: the paths of one UPDATE
# come one after the other with the same attributes, and comparing them
# whole costs less than building their key. (One pair, replaced at once:
# paths may be decoded in more than one thread.)
_LAST_TYPE2: list[tuple[Any, Any]] = [(None, None)]


def _type2_attributes(path: Any) -> tuple[str, tuple[str, ...], int, bool, str | None]:
    pattrs = path.pattrs
    last_pattrs, last = _LAST_TYPE2[0]
    if last_pattrs is not None and pattrs == last_pattrs:
        return last  # type: ignore[no-any-return]
    found = _type2_attributes_of(path)
    _LAST_TYPE2[0] = (pattrs, found)
    return found


def _type2_attributes_of(path: Any) -> tuple[str, tuple[str, ...], int, bool, str | None]:
    # The key: the attributes' encodings, but of the MP_REACH_NLRI only its
    # next hop. Its encoding carries the UPDATE's routes too, so it differs
    # from one UPDATE to the next even when everything a route takes from it
    # is the same: keyed whole, every UPDATE missed.
    key: list[Any] = []
    for wrapped in path.pattrs:
        kind = _TYPE_NAMES.get(wrapped.type_url) or _type_name(wrapped)
        if kind in _TYPE2_KINDS:
            key.append(kind)
            key.append(wrapped.value)
        elif kind == "MpReachNLRIAttribute":
            key.append(kind)
            key.append(_reach_next_hop(wrapped))
    found = _TYPE2_ATTRIBUTES.get(tuple(key))
    if found is not None:
        return found
    attr = gobgp_api.attribute_pb2
    next_hop = ""
    targets: list[str] = []
    seq, sticky = 0, False
    router_mac: str | None = None
    for wrapped in path.pattrs:
        kind = _type_name(wrapped)
        if kind == "MpReachNLRIAttribute":
            next_hop = _reach_next_hop(wrapped)
        elif kind == "NextHopAttribute":
            next_hop = next_hop or _unpack(wrapped, attr.NextHopAttribute).next_hop
        elif kind == "ExtendedCommunitiesAttribute":
            found_targets, seq, sticky, router_mac = _communities(
                _unpack(wrapped, attr.ExtendedCommunitiesAttribute)
            )
            targets.extend(found_targets)
    if not next_hop:
        raise RouteError("no next hop")
    value = (
        canonical_vtep(next_hop),
        _canonical_targets(tuple(targets)),
        seq,
        sticky,
        _canonical_router_mac(router_mac),
    )
    return _remember(_TYPE2_ATTRIBUTES, tuple(key), value)  # type: ignore[no-any-return]


def _decode_mac_ip(path: Any, nlri: Any) -> MacIpRoute:
    """``decode`` of a type 2: its attributes looked up by their encoding
    (``_TYPE2_ATTRIBUTES``), its NLRI's fields canonicalised per route."""
    next_hop, targets, seq, sticky, router_mac = _type2_attributes(path)
    n = gobgp_api.attribute_pb2.EVPNMACIPAdvertisementRoute.FromString(nlri.value)
    labels = n.labels
    if not labels:
        raise RouteError(f"type 2 {n.mac_address} without a label (VNI)")
    if len(labels) > 2:
        raise RouteError(f"type 2 {n.mac_address} with {len(labels)} labels (at most 2)")
    ip = _ip_or_none(n.ip_address)
    # (MacIpRoute's own checks, the RD, next hop, route targets and router
    # MAC canonical once per distinct encoding)
    return mac_ip_route(
        rd=_cached_rd(n.rd),
        mac=canonical_mac(n.mac_address),
        vni=check_vni(labels[0]),
        next_hop=next_hop,
        ip=canonical_ip(ip) if ip is not None else None,
        route_targets=targets,
        mobility_seq=seq,
        sticky=sticky,
        esi=_decode_esi(n.esi),
        ethernet_tag=n.ethernet_tag,
        l3vni=check_vni(labels[1]) if len(labels) == 2 else None,
        router_mac=router_mac,
    )


def _decode_other(path: Any, name: str) -> EvpnRoute | None:
    """``decode`` of a type 3 or 5 (None for any other type)."""
    attr = gobgp_api.attribute_pb2
    next_hop = ""
    targets: list[str] = []
    router_mac: str | None = None
    pmsi = None
    for wrapped in path.pattrs:
        kind = _type_name(wrapped)
        if kind == "MpReachNLRIAttribute":
            next_hop = _next_hop(wrapped)
        elif kind == "NextHopAttribute":
            next_hop = next_hop or _unpack(wrapped, attr.NextHopAttribute).next_hop
        elif kind == "ExtendedCommunitiesAttribute":
            decoded = _COMMUNITIES.get(wrapped.value)
            if decoded is None:
                decoded = _remember(
                    _COMMUNITIES,
                    wrapped.value,
                    _communities(_unpack(wrapped, attr.ExtendedCommunitiesAttribute)),
                )
            found, _, _, router_mac = decoded  # (MAC mobility: type 2 only)
            targets.extend(found)
        elif kind == "PmsiTunnelAttribute":
            pmsi = _unpack(wrapped, attr.PmsiTunnelAttribute)
    if not next_hop:
        raise RouteError("no next hop")
    if name == "EVPNIPPrefixRoute":
        n = _unpack(path.nlri, attr.EVPNIPPrefixRoute)
        return _prefix_route(
            n,
            l3vni=n.label,
            next_hop=next_hop,
            route_targets=tuple(targets),
            router_mac=router_mac,
        )
    if name == "EVPNInclusiveMulticastEthernetTagRoute":
        n = _unpack(path.nlri, attr.EVPNInclusiveMulticastEthernetTagRoute)
        if pmsi is None:
            raise RouteError(f"type 3 from {n.ip_address} without a PMSI tunnel attribute")
        if pmsi.type != PMSI_INGRESS_REPLICATION:
            raise RouteError(
                f"type 3 from {n.ip_address}: PMSI tunnel type {pmsi.type} "
                "is not ingress replication"
            )
        endpoint = str(ipaddress.IPv4Address(bytes(pmsi.id))) if len(pmsi.id) == 4 else None
        return InclusiveMulticastRoute(
            rd=_decode_rd(n.rd),
            vni=pmsi.label,
            originator=n.ip_address,
            next_hop=next_hop,
            route_targets=tuple(targets),
            ethernet_tag=n.ethernet_tag,
            tunnel_endpoint=endpoint,
        )
    return None


@functools.lru_cache(maxsize=1024)
def _canonical_targets(targets: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted({canonical_rt(t) for t in targets}))


@functools.lru_cache(maxsize=1024)
def _canonical_router_mac(mac: str | None) -> str | None:
    return canonical_mac(mac) if mac is not None else None
