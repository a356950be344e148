// Packet headers and the per-packet metadata shared by every control.
#ifndef P4VTEP_HEADERS_P4
#define P4VTEP_HEADERS_P4

#include "defines.p4"

// What the controller learns of a punted frame (cpu_port.p4; without
// P4VTEP_CPU_PATH, a profile with only the l2 trap, the port and the
// reason as before issue 39). The pads come
// first so that each field ends on a byte boundary: Tofino's egress can then
// fill the port from the bridged port without a rotation.
@controller_header("packet_in")
header packet_in_t {
    bit<7>       _pad;
    port_t       ingress_port;
    punt_class_t reason;         // PUNT_CLASS_*
#ifdef P4VTEP_CPU_PATH
    vni_t        vni;            // the VNI it was switched in (from the fabric: the one it came in)
    bit<4>       _pad2;
    vlan_id_t    vlan;           // the VF VLAN it came on (0 from the fabric)
#endif
}

// What the controller asks of a frame it sends (mode: PACKET_OUT_*).
@controller_header("packet_out")
header packet_out_t {
    port_t egress_port;          // PORT: out of this port, untouched
    bit<7> _pad;
#ifdef P4VTEP_CPU_PATH
    bit<8> mode;
    vni_t  vni;                  // ROUTE: the VRF (its L3 VNI); FLOOD: the VNI
#endif
}

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header vlan_tag_t {
    bit<3>    pcp;
    bit<1>    dei;
    vlan_id_t vid;
    bit<16>   ether_type;
}

header arp_t {
    bit<16>     htype;
    bit<16>     ptype;
    bit<8>      hlen;
    bit<8>      plen;
    bit<16>     oper;
    mac_addr_t  sha;
    ipv4_addr_t spa;
    mac_addr_t  tha;
    ipv4_addr_t tpa;
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header ipv6_t {
    bit<4>      version;
    bit<8>      traffic_class;
    bit<20>     flow_label;
    bit<16>     payload_len;
    bit<8>      next_hdr;
    bit<8>      hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

// The first word of every ICMP message: all the gateway's echo reply rewrites.
header icmp_t {
    bit<16> type_code;
    bit<16> checksum;
}

// Neighbor Solicitation and Advertisement after the ICMPv6 word: the NA's
// R/S/O flags (an NS has zeros there) and the target address (RFC 4861 4.3).
header nd_t {
    bit<32>     flags;
    ipv6_addr_t target;
}

// One link-layer address option (type 1 source, 2 target; length 1 unit).
header nd_option_t {
    bit<8>     type;
    bit<8>     length;
    mac_addr_t addr;
}

header vxlan_t {
    bit<8>  flags;
    bit<24> reserved;
    vni_t   vni;
    bit<8>  reserved2;
}

// The underlay this switch builds (encap_*): the same bytes as ipv4_t and
// vxlan_t, with the fields encap sets together (constants, or a value and its
// zero padding) as one field each, so the encap action is 7 assignments
// shorter (each one a primitive per packet on BMv2, bench/NOTES.md).
header encap_ipv4_t {
    bit<8>      version_ihl;     // 0x45: no options
    bit<8>      tos;             // DSCP, then ECN 0
    bit<16>     total_len;
    bit<32>     id_flags_frag;   // 0: never fragmented by this switch
    bit<16>     ttl_protocol;    // OUTER_TTL, then UDP
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header encap_vxlan_t {
    bit<32> flags_reserved;   // the "I" flag, then 24 reserved bits
    bit<32> vni_reserved;     // the VNI, then 8 reserved bits
}

// The un-prefixed slots hold the frame being switched. A packet from the
// fabric arrives with the underlay in them and the tenant's Ethernet header in
// inner_ethernet (the rest of the tenant frame is payload); decap moves it
// up. Encap leaves the frame where it is and puts a new underlay in the
// encap_* slots, which the deparser emits first.
struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   encap_ethernet;
    encap_ipv4_t encap_ipv4;
    udp_t        encap_udp;
    encap_vxlan_t encap_vxlan;
    ethernet_t   ethernet;
    vlan_tag_t   vlan;
    vlan_tag_t   vlan2;          // only parsed to refuse double-tagged frames
    arp_t        arp;
    ipv4_t       ipv4;
    ipv6_t       ipv6;
    udp_t        udp;
    tcp_t        tcp;
#ifdef P4VTEP_ROUTING
    icmp_t       icmp;           // ICMP, or ICMPv6
#endif
#ifdef P4VTEP_IPV6
    nd_t         nd;             // an NS or NA from an access port
    nd_option_t  nd_option;      // its one link-layer address (or nonce) option
#endif
    vxlan_t      vxlan;
    ethernet_t   inner_ethernet;
#ifdef P4VTEP_ROUTING
    ipv4_t       inner_ipv4;     // moved into ipv4 by decap
#endif
#ifdef P4VTEP_IPV6
    ipv6_t       inner_ipv6;     // moved into ipv6 by routing (or decap on Tofino)
#endif
}

// Every control reads the ingress port, and writes its forwarding decision
// (unicast port, multicast group, traffic class), here rather than in an
// architecture's intrinsic metadata; the top level of each target copies them.
struct local_metadata_t {
    port_t        ingress_port;
    bool          parser_error;    // malformed outer headers (truncated, bad IPv4)
#ifdef PARSER_CHECKS_IPV4_CHECKSUM
    bool          checksum_ok;     // outer IPv4 header checksum right (or not checked)
#endif
    port_t        egress_port;     // unicast decision
    mcast_group_t mcast_grp;       // flood decision (0 = unicast)
    bit<2>        port_role;
    bool          from_fabric;
    vlan_id_t     src_vlan;        // VF VLAN the frame arrived on (access)
    vm_index_t    src_vm;          // sending VM (access), 0 = none
    vni_t         vni;
    vni_index_t   vni_index;
    bit<3>        traffic_class;
    mcast_group_t flood_group;     // local VFs + one replica per remote VTEP
    bool          is_packet_out;   // a packet-out in PORT mode (sent as it is)
    // The CPU path (cpu_port.p4): a packet-out the pipeline routes or floods
    // (never punted back), and why a frame goes to the controller.
#ifdef P4VTEP_CPU_PATH
    bool          from_cpu;
    bool          cpu_flood;       // ...to be flooded (PACKET_OUT_FLOOD)
#endif
    punt_class_t  punt_class;
    bool          arp_replied;     // ARP suppression turned the request into a reply
#ifdef P4VTEP_IPV6
    bool          nd_replied;      // ND suppression took the solicitation (no MAC lookup)...
    bool          nd_own_dad;      // ...but it is its owner's DAD probe: flooded, not answered
    bool          nd_dad;          // a DAD probe (from ::) for another's address: defended
    mac_addr_t    nd_target_mac;   // the target's MAC (nd_suppression)
    mac_addr_t    nd_owner_diff;   // the target's MAC XOR the asker's (0: the asker owns it)
    bit<1>        nd_router;       // the target is the gateway (the NA's R flag)
#endif
    mac_addr_t    src_mac_diff;    // source MAC XOR the VF's bound MAC (0 = not spoofed)
    // Port security (port_security.p4). The address a frame claims, set by
    // the parser: the IPv4 source or an ARP's sender address; the IPv6
    // source, or a Neighbor Advertisement's target (on Tofino the control
    // puts the target there: tna/arch.p4 says why).
    ipv4_addr_t   claimed_ipv4;
    ipv6_addr_t   claimed_ipv6;
    bool          inspect;         // (parser) ARP, ICMPv6, or UDP from a DHCP server port
    // The sending VM's port security flags (access_binding): `guarded`, then
    // `dhcp_server` (one field: one assignment per frame on BMv2).
    bit<2>        guard_flags;
    bool          mac_allowed;     // the source MAC is one of the VF's extra MACs
    bool          source_refused;  // a source guard missed: the claim is not the VM's
    bit<3>        port_security_class;  // the reason it dropped, - DROP_SPOOFED_IP
#ifdef PORT_SECURITY_BOUND_IPV4
    ipv4_addr_t   bound_ipv4;      // the VM's first IPv4 address (bind_vm), 0: none
#endif
#ifdef PORT_SECURITY_BESIDE_BINDING
    // What Tofino's conditions compare in halves (port_security.p4): an ARP
    // sender / ND option MAC XOR the Ethernet source, and a link-local
    // claim's interface id XOR the VM's MAC (bind_vm).
    mac_addr_t    lla_diff;
    bit<24>       ll_iid_diff_hi;
    bit<24>       ll_iid_diff_lo;
#ifdef P4VTEP_IPV6
    bool          claim_always_allowed;  // fe80::/64 or :: (always_allowed_v6)
#endif
#endif
    // Forwarding decision
    vm_index_t    dst_vm;          // receiving local VM, 0 = none
    vlan_id_t     egress_vlan;     // VF VLAN to deliver on
    bool          do_encap;
    ipv4_addr_t   remote_vtep;
    mac_addr_t    next_hop_mac;
    // Hash of the tenant flow: ECMP member choice and VXLAN UDP source port
    bit<16>       flow_hash;
#ifdef FLOW_HASH_L4_PORTS
    bit<16>       l4_src_port;     // (tna/flow_hash.p4; v1model's key has its own)
    bit<16>       l4_dst_port;
#endif
    bit<2>        tx_color;
    bit<2>        rx_color;
    // QoS (policing.p4): whether the VM in question has a policy in that
    // direction, from the entry that named it (an unpoliced VM passes no meter)
    bit<1>        tx_policed;      // the sending VM (access_binding)
    bit<1>        rx_policed;      // a unicast's receiving VM (mac_table, routes)
    bit<1>        flood_policed;   // a flood copy's receiving VM (flood_replica)
    drop_reason_t drop_reason;
#ifdef P4VTEP_ROUTING
    // Routing (l3_forwarding.p4)
    vrf_t         vrf;             // the VRF routed frames use (VM binding, or L3 VNI)
    bool          is_l3vni;        // a VRF's L3 VNI (from the fabric)
    bool          to_router;       // the MAC lookup sent the frame to the router
    bool          to_gateway;      // addressed to a gateway IP
    bool          routed;          // routed (VxlanEncap: inner source = router MAC)
    mac_addr_t    gateway_mac;     // the anycast gateway MAC (source of routed frames)
#endif
    ARCH_METADATA
}

#endif  // P4VTEP_HEADERS_P4
