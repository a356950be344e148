"""Drop reasons: indices of the pipeline's ingress/egress drop counters.

Mirrors the DROP_* constants in p4src/include/defines.p4; a unit test checks
that the two lists agree.
"""

from __future__ import annotations

import enum


class DropReason(enum.IntEnum):
    UNKNOWN_PORT = 1
    UNTAGGED_ACCESS = 2
    UNKNOWN_VLAN = 3
    SPOOFED_SOURCE = 4
    UNKNOWN_VNI = 5
    NOT_FOR_VTEP = 6
    BAD_VXLAN = 7
    WRONG_UDP_PORT = 8
    METER_RED_TX = 9
    METER_RED_RX = 10
    NO_ROUTE = 11
    SPLIT_HORIZON = 12
    MALFORMED = 13
    TTL_EXPIRED = 14
    DOUBLE_TAGGED = 15
    BAD_CHECKSUM = 16
    NO_FLOOD_GROUP = 17
    NESTED_VXLAN = 18
    NO_LOCAL_VTEP = 19
    NOT_IPV4_FABRIC = 20
    OVERSIZE = 21
    TENANT_TTL_EXPIRED = 22
    NO_TENANT_ROUTE = 23
    NOT_IP_ROUTED = 24
    WRONG_ROUTER_MAC = 25
    ROUTED_TRANSIT = 26
    TO_GATEWAY = 27
    EXCESS_CONGESTED = 28
    TENANT_HOP_LIMIT = 29
    IPV6_SCOPE = 30
    # Port security (issue 38): also counted per VM, class reason - SPOOFED_IP
    # (port_security_drop_counter).
    SPOOFED_IP = 31
    SPOOFED_ARP = 32
    SPOOFED_ND = 33
    RA_FROM_VM = 34
    DHCP_SERVER_FROM_VM = 35
    # The CPU path (issue 39): a VM's Router Solicitation in a routed VNI, for
    # the controller to answer (punt_policy punts it).
    ROUTER_SOLICITATION = 36
    # An IPv6 packet routed into a VNI whose MTU it exceeds: the controller
    # answers ICMPv6 Packet Too Big (punt_policy punts it).
    PACKET_TOO_BIG = 37


DROP_REASON_COUNT = 40
