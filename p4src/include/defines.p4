// Constants and types shared by every p4vtep target.
#ifndef P4VTEP_DEFINES_P4
#define P4VTEP_DEFINES_P4

typedef bit<9>   port_t;
typedef bit<48>  mac_addr_t;
typedef bit<32>  ipv4_addr_t;
typedef bit<128> ipv6_addr_t;
typedef bit<12>  vlan_id_t;
typedef bit<24>  vni_t;
typedef bit<16>  vni_index_t;   // dense per-switch index of a VNI (counters)
typedef bit<16>  vm_index_t;    // dense per-switch index of a local VM (meters, counters)
typedef bit<16>  mcast_group_t;
typedef bit<8>   drop_reason_t;
typedef bit<24>  vrf_t;         // a tenant's IP VRF, named by its L3 VNI; 0 = not routed

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<16> ETHERTYPE_QINQ = 0x88a8;
const bit<16> ETHERTYPE_IPV6 = 0x86dd;

const bit<8> IP_PROTO_ICMP = 1;
const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;
const bit<8> IP_PROTO_ICMPV6 = 58;

const bit<16> VXLAN_UDP_PORT = 4789;
const bit<8>  VXLAN_FLAG_VNI_VALID = 0x08;  // the "I" flag of RFC 7348
// RFC 7348: the outer UDP source port is a hash of the inner flow, kept in the
// dynamic range 49152-65535, i.e. the top two bits set and 14 bits of hash.
const bit<2> VXLAN_SRC_PORT_TOP_BITS = 0b11;

// ICMP type and code as one word (what the echo reply's checksum update needs).
const bit<16> ICMP_ECHO_REQUEST = 0x0800;
const bit<16> ICMP_ECHO_REPLY   = 0x0000;

// ICMPv6 type and code as one word (RFC 4443, RFC 4861). The IPv6, ND and
// port-security constants carry @noWarn("unused"): Tofino 1's profile
// (tna/p4vtep.p4) compiles without IPv6 and port security.
@noWarn("unused") const bit<16> ICMPV6_ECHO_REQUEST = 0x8000;   // 128
const bit<16> ICMPV6_ECHO_REPLY   = 0x8100;   // 129
@noWarn("unused") const bit<16> ICMPV6_NS           = 0x8700;   // 135, Neighbor Solicitation
@noWarn("unused") const bit<16> ICMPV6_NA           = 0x8800;   // 136, Neighbor Advertisement
// Neighbor Advertisement flags (the top bits of its first word; R is set for
// the gateway's addresses: nd_suppression's `router`).
@noWarn("unused") const bit<32> NA_FLAG_ROUTER    = 0x80000000;
@noWarn("unused") const bit<32> NA_FLAG_SOLICITED = 0x40000000;
@noWarn("unused") const bit<32> NA_FLAG_OVERRIDE  = 0x20000000;
// ND options (RFC 4861 4.6): source and target link-layer address, each one
// 8-byte unit; the nonce of enhanced DAD (RFC 7527).
@noWarn("unused") const bit<8> ND_OPT_SOURCE_LLA = 1;
@noWarn("unused") const bit<8> ND_OPT_TARGET_LLA = 2;
@noWarn("unused") const bit<8> ND_OPT_NONCE      = 14;
// The ICMPv6 length of an NS or NA without options (4 + 4 + 16 bytes), and
// with one 8-byte option.
@noWarn("unused") const bit<16> ND_LEN_NO_OPTION  = 24;
@noWarn("unused") const bit<16> ND_LEN_ONE_OPTION = 32;
// Every ND message a node sends or accepts has hop limit 255 (RFC 4861 7.1).
@noWarn("unused") const bit<8> ND_HOP_LIMIT = 255;
// All-nodes (ff02::1) and its MAC (RFC 2464: 33:33 ++ the low 32 bits).
@noWarn("unused") const ipv6_addr_t IPV6_ALL_NODES = 0xff020000000000000000000000000001;
@noWarn("unused") const mac_addr_t  MAC_ALL_NODES  = 0x333300000001;
// fe80::/64, the link-local prefix (RFC 4291 2.5.6): IPV6_LINK_LOCAL's top
// 64 bits, which IPV6_LINK_LOCAL_MASK selects (a ternary key's mask; a
// condition compares the slice [127:64]). ::, the unspecified address, is a
// duplicate address detection's source (RFC 4862 5.4).
@noWarn("unused") const ipv6_addr_t IPV6_LINK_LOCAL      = 0xfe800000000000000000000000000000;
@noWarn("unused") const ipv6_addr_t IPV6_LINK_LOCAL_MASK = 0xffffffffffffffff0000000000000000;
@noWarn("unused") const ipv6_addr_t IPV6_UNSPECIFIED     = 0;

// ICMPv6 messages only a router sends (RFC 4861): what RA guard drops.
@noWarn("unused") const bit<8> ICMPV6_TYPE_RA       = 134;  // Router Advertisement
@noWarn("unused") const bit<8> ICMPV6_TYPE_REDIRECT = 137;  // Redirect
// What a host sends to find its routers (RFC 4861 6.3.7): the controller's.
@noWarn("unused") const bit<8> ICMPV6_TYPE_RS       = 133;  // Router Solicitation

// DHCP server messages (server port -> client port): DHCPv4 67 -> 68,
// DHCPv6 547 -> 546 (RFC 2131, RFC 8415).
const bit<16> DHCPV4_SERVER_PORT = 67;
const bit<16> DHCPV4_CLIENT_PORT = 68;
const bit<16> DHCPV6_SERVER_PORT = 547;
const bit<16> DHCPV6_CLIENT_PORT = 546;

const bit<16> ARP_OPER_REQUEST = 1;
const bit<16> ARP_OPER_REPLY   = 2;

const bit<8> OUTER_TTL = 64;
// IPv4 version 4, header length 5 words (no options).
const bit<8> IPV4_VERSION_IHL_NO_OPTIONS = 0x45;
// DSCP given to the outer header of a packet its meter coloured YELLOW
// (CS1, "lower effort"), so the underlay drops it first under congestion.
const bit<6> DSCP_YELLOW = 8;

// Longest tenant frame accepted from a VF: a 9000-byte MTU plus Ethernet and
// VF tag. Encapsulated it is 50 bytes longer, which a 9216-byte underlay MTU
// carries.
const bit<32> MAX_TENANT_FRAME = 9018;

// The CPU port differs per target: the architecture file (v1model/arch.p4,
// tna/arch.p4), included before this one, sets CPU_PORT_VALUE.
const port_t CPU_PORT = CPU_PORT_VALUE;

// Port roles, set per port by the controller.
const bit<2> PORT_ROLE_NONE   = 0;
const bit<2> PORT_ROLE_ACCESS = 1;   // toward a server: VM frames tagged with the VF's VLAN
const bit<2> PORT_ROLE_FABRIC = 2;   // uplink toward a spine: the IPv4 underlay

// Meter colours differ per target (RED is 2 on v1model, 3 on TNA); GREEN is 0.
const bit<2> METER_GREEN  = 0;
const bit<2> METER_YELLOW = METER_COLOR_YELLOW;
const bit<2> METER_RED    = METER_COLOR_RED;
// Colour counters hold 4 cells per VM (index VM ++ colour: 2 bits).
#define COLORS_PER_VM 4


// Why a packet was dropped: the index of the drop counters. The controller
// mirrors this list (control_plane/p4vtep/dataplane/drop_reasons.py); keep
// both in step.
const drop_reason_t DROP_NONE              = 0;
const drop_reason_t DROP_UNKNOWN_PORT      = 1;   // port has no role
const drop_reason_t DROP_UNTAGGED_ACCESS   = 2;   // access frame without a VF VLAN tag
const drop_reason_t DROP_UNKNOWN_VLAN      = 3;   // no VM bound to (port, VLAN)
const drop_reason_t DROP_SPOOFED_SOURCE    = 4;   // source MAC is not the VF's MAC
const drop_reason_t DROP_UNKNOWN_VNI       = 5;
const drop_reason_t DROP_NOT_FOR_VTEP      = 6;   // fabric packet not addressed to this VTEP
const drop_reason_t DROP_BAD_VXLAN         = 7;   // truncated VXLAN, I flag clear, inner VLAN
const drop_reason_t DROP_WRONG_UDP_PORT    = 8;   // addressed to the VTEP but not UDP 4789
const drop_reason_t DROP_METER_RED_TX      = 9;   // VM transmit above its peak rate
const drop_reason_t DROP_METER_RED_RX      = 10;  // VM receive above its peak rate
const drop_reason_t DROP_NO_ROUTE          = 11;  // no underlay route to the remote VTEP
const drop_reason_t DROP_SPLIT_HORIZON     = 12;  // would go back where it came from
const drop_reason_t DROP_MALFORMED         = 13;  // parser error (truncated, bad IPv4 version)
const drop_reason_t DROP_TTL_EXPIRED       = 14;  // outer TTL 0 on a fabric packet
const drop_reason_t DROP_DOUBLE_TAGGED     = 15;  // two VLAN tags on an access port
const drop_reason_t DROP_BAD_CHECKSUM      = 16;  // outer IPv4 header checksum wrong
const drop_reason_t DROP_NO_FLOOD_GROUP    = 17;  // BUM in a VNI that floods nowhere
const drop_reason_t DROP_NESTED_VXLAN      = 18;  // a VM's own VXLAN cannot be tunnelled again
const drop_reason_t DROP_NO_LOCAL_VTEP     = 19;  // encap needed but the VTEP is not configured
const drop_reason_t DROP_NOT_IPV4_FABRIC   = 20;  // non-IPv4 frame on a fabric port
const drop_reason_t DROP_OVERSIZE          = 21;  // tenant frame longer than MAX_TENANT_FRAME
// Routing between a tenant's subnets (l3_forwarding.p4)
const drop_reason_t DROP_TENANT_TTL_EXPIRED = 22; // routed frame with IPv4 TTL <= 1
const drop_reason_t DROP_NO_TENANT_ROUTE   = 23;  // no host or prefix route in the VRF
const drop_reason_t DROP_NOT_IP_ROUTED     = 24;  // neither IPv4 nor IPv6, to the gateway/router MAC
const drop_reason_t DROP_WRONG_ROUTER_MAC  = 25;  // L3 VNI frame not to this ToR's router MAC
const drop_reason_t DROP_ROUTED_TRANSIT    = 26;  // routed fabric to fabric: no transit
const drop_reason_t DROP_TO_GATEWAY        = 27;  // to a gateway IP, not an echo request
// QoS (policing.p4): beyond its guarantee (YELLOW, or its VM has no policy)
// while its queue was congested (drop precedence: v1model/queue_admission.p4;
// on TNA the traffic manager drops these by colour, so TNA never uses it)
@noWarn("unused") const drop_reason_t DROP_EXCESS_CONGESTED = 28;
// Routing IPv6 (l3_forwarding.p4)
@noWarn("unused") const drop_reason_t DROP_TENANT_HOP_LIMIT  = 29;  // routed IPv6 frame with hop limit <= 1
@noWarn("unused") const drop_reason_t DROP_IPV6_SCOPE        = 30;  // routed IPv6 frame with a link-local,
                                                  // multicast or unspecified address
// Port security (port_security.p4): a guarded VM sending as someone else.
// Counted per VM too, in class reason - DROP_SPOOFED_IP (keep them in a row).
@noWarn("unused") const drop_reason_t DROP_SPOOFED_IP        = 31;  // IPv4/IPv6 source not the VM's
@noWarn("unused") const drop_reason_t DROP_SPOOFED_ARP       = 32;  // ARP sender MAC or IPv4 address not the VM's
@noWarn("unused") const drop_reason_t DROP_SPOOFED_ND        = 33;  // NA target not the VM's, or a link-layer
                                                  // address option not the frame's source
@noWarn("unused") const drop_reason_t DROP_RA_FROM_VM        = 34;  // ICMPv6 Router Advertisement or Redirect
@noWarn("unused") const drop_reason_t DROP_DHCP_SERVER_FROM_VM = 35; // DHCP server message from a VM not allowed to
// The controller's CPU path (issue 39, cpu_port.p4): an ICMPv6 Router
// Solicitation from a VM in a routed VNI, which the controller answers (in an
// L2-only VNI it is flooded to the tenant's own routers).
@noWarn("unused") const drop_reason_t DROP_ROUTER_SOLICITATION = 36;
// An IPv6 packet routed into a VNI whose MTU it exceeds (40 + payload length
// over the MTU: route_to_local_vm_v6), which the controller answers with
// ICMPv6 Packet Too Big (RFC 4443 3.2). IPv4 is not checked.
@noWarn("unused") const drop_reason_t DROP_PACKET_TOO_BIG = 37;
const bit<32> DROP_REASON_COUNT = 40;

// Punt classes (packet_in.reason, cpu_port.p4): why a frame went to the
// controller. Each has its CoPP meter and counters (index = class). The
// drop reasons a class covers are the controller's punt_policy entries.
typedef bit<8> punt_class_t;
@noWarn("unused") const punt_class_t PUNT_CLASS_NONE                = 0;  // not punted
const punt_class_t PUNT_CLASS_L2_TRAP             = 1;  // an l2 entry traps the MAC (mac_table punt_to_cpu)
@noWarn("unused") const punt_class_t PUNT_CLASS_TTL_EXPIRED         = 2;  // routed, TTL / hop limit <= 1
@noWarn("unused") const punt_class_t PUNT_CLASS_NO_ROUTE            = 3;  // routed, no host or prefix route
@noWarn("unused") const punt_class_t PUNT_CLASS_TO_GATEWAY          = 4;  // to a gateway IP, not answered here
@noWarn("unused") const punt_class_t PUNT_CLASS_ROUTER_SOLICITATION = 5;  // RS from a VM in a routed VNI
@noWarn("unused") const punt_class_t PUNT_CLASS_PACKET_TOO_BIG      = 6;  // routed IPv6 over its VNI's MTU
// Cells of the CoPP meter and counters: every class, and room for more.
#define PUNT_CLASS_COUNT 8
// What a packet-out asks for (packet_out.mode).
@noWarn("unused") const bit<8> PACKET_OUT_PORT  = 0;  // out of packet_out.egress_port, untouched
@noWarn("unused") const bit<8> PACKET_OUT_ROUTE = 1;  // routed in VRF packet_out.vni as from a VM
@noWarn("unused") const bit<8> PACKET_OUT_FLOOD = 2;  // flooded in VNI packet_out.vni as from a VM
// A punted frame is cut to this length (BMv2: the controller quotes at most
// 1280 bytes of it in an ICMP error).
@noWarn("unused") const bit<32> PUNT_TRUNCATE_BYTES = 1400;

#endif  // P4VTEP_DEFINES_P4
