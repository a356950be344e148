// The header parser and deparser every target shares. Each architecture wraps
// them: its own start state (intrinsic metadata, bridged metadata), its own
// checksum handling, and the headers it emits first (packet_in, encap_*).
#ifndef P4VTEP_PARSER_P4
#define P4VTEP_PARSER_P4

#include "headers.p4"

// A packet from the CPU port starts with the controller's packet-out header.
// The three flags must be initialised by the caller: only a bad header sets
// the first two, only a frame port security inspects the third.
// The headers' direction is the architecture's (arch.p4 says why).
// Port security (port_security.p4) looks up the address a frame claims:
// `claimed_ipv4` is an IPv4 source or an ARP sender address, `claimed_ipv6`
// an IPv6 source or a Neighbor Advertisement's target. Each is written once
// on any path (Tofino 1's parser cannot overwrite a field), so on Tofino the
// NA's target is put there by the control (CLAIM_NA_TARGET, arch.p4).
parser VtepHeaderParser(packet_in packet,
                        PARSER_HEADERS_DIRECTION headers_t hdr,
                        inout bool malformed,
#ifdef PARSER_CHECKS_IPV4_CHECKSUM
                        inout bool checksum_ok,
#endif
                        in port_t ingress_port,
                        inout ipv4_addr_t claimed_ipv4,
                        inout ipv6_addr_t claimed_ipv6,
                        inout bool inspect) {
    IPV4_CHECKSUM_DECL

    state start {
        transition select(ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_QINQ: parse_vlan;
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_VLAN: parse_vlan2;
            ETHERTYPE_QINQ: parse_vlan2;
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_vlan2 {
        packet.extract(hdr.vlan2);
        transition accept;
    }

    state parse_arp {
        packet.extract(hdr.arp);
        claimed_ipv4 = hdr.arp.spa;
        inspect = true;
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        claimed_ipv4 = hdr.ipv4.src_addr;
        IPV4_CHECKSUM_VERIFY(hdr, checksum_ok)
        // With options (ihl > 5) or as a later fragment the L4 header is not
        // where we would look: switch the frame on L2/L3 only. A version
        // other than 4 or a header shorter than 5 words is malformed (a flag,
        // not a parser error: Tofino has no verify()).
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.frag_offset,
                          hdr.ipv4.protocol) {
            (4, 5, 0, IP_PROTO_UDP): parse_udp;
            (4, 5, 0, IP_PROTO_TCP): parse_tcp;
#ifdef P4VTEP_ROUTING
            (4, 5, 0, IP_PROTO_ICMP): parse_icmp;
#endif
            (4, 0 &&& 0xC, _, _): malformed_ipv4;   // ihl 0..3
            (4, 4, _, _): malformed_ipv4;
            (4, _, _, _): accept;
            default: malformed_ipv4;
        }
    }

    state malformed_ipv4 {
        malformed = true;
        transition accept;
    }

    // Extension headers are not walked: such a packet is switched and
    // routed on its addresses (the flow hash has no L4 ports for it).
    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        claimed_ipv6 = hdr.ipv6.src_addr;
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_TCP: parse_tcp;
#ifdef P4VTEP_IPV6
            IP_PROTO_ICMPV6: parse_icmpv6;
#endif
            default: accept;
        }
    }

#ifdef P4VTEP_ROUTING
    state parse_icmp {
        packet.extract(hdr.icmp);
        transition accept;
    }
#endif

#ifdef P4VTEP_IPV6
    // Every ICMPv6 message is one port security looks at (RA guard, ND).
    state parse_icmpv6 {
        packet.extract(hdr.icmp);
        inspect = true;
        transition select(hdr.icmp.type_code) {
            ICMPV6_NS: parse_nd;
            ICMPV6_NA: parse_na;
            default: accept;
        }
    }

    // An advert claims its target address, not its source.
    state parse_na {
        packet.extract(hdr.nd);
        CLAIM_NA_TARGET(claimed_ipv6, hdr)
        transition select(hdr.ipv6.payload_len) {
            ND_LEN_ONE_OPTION: parse_nd_option;
            default: accept;
        }
    }

    // The fixed part, and the option when there is exactly one 8-byte one
    // (the shapes ND suppression answers: nd_suppression.p4).
    state parse_nd {
        packet.extract(hdr.nd);
        transition select(hdr.ipv6.payload_len) {
            ND_LEN_ONE_OPTION: parse_nd_option;
            default: accept;
        }
    }

    state parse_nd_option {
        packet.extract(hdr.nd_option);
        transition accept;
    }
#endif

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.src_port, hdr.udp.dst_port) {
            (_, VXLAN_UDP_PORT): parse_vxlan;
            (DHCPV4_SERVER_PORT, DHCPV4_CLIENT_PORT): dhcp_server_message;
            (DHCPV6_SERVER_PORT, DHCPV6_CLIENT_PORT): dhcp_server_message;
            default: accept;
        }
    }

    // Port security's DHCP guard looks at it.
    state dhcp_server_message {
        inspect = true;
        transition accept;
    }

    state parse_vxlan {
        packet.extract(hdr.vxlan);
        transition parse_inner_ethernet;
    }

    // The tenant frame inside VXLAN is parsed as far as fabric ingress reads
    // it: its Ethernet header (destination MAC, and the EtherType that refuses
    // tagged inner frames) and, for routing, its IPv4 header. The rest is
    // payload, delivered as it came.
    state parse_inner_ethernet {
        packet.extract(hdr.inner_ethernet);
#ifdef P4VTEP_ROUTING
        transition select(hdr.inner_ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_inner_ipv4;
#ifdef P4VTEP_IPV6
            ETHERTYPE_IPV6: parse_inner_ipv6;
#endif
            default: accept;
        }
    }

#ifdef P4VTEP_IPV6
    state parse_inner_ipv6 {
        packet.extract(hdr.inner_ipv6);
        transition accept;
    }
#endif

    state parse_inner_ipv4 {
        packet.extract(hdr.inner_ipv4);
#endif
        transition accept;
    }
}

control VtepHeaderDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.vlan2);
        packet.emit(hdr.arp);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
#ifdef P4VTEP_ROUTING
        packet.emit(hdr.icmp);
#endif
#ifdef P4VTEP_IPV6
        packet.emit(hdr.nd);
        packet.emit(hdr.nd_option);
#endif
        packet.emit(hdr.vxlan);
        packet.emit(hdr.inner_ethernet);
#ifdef P4VTEP_ROUTING
        packet.emit(hdr.inner_ipv4);
#endif
#ifdef P4VTEP_IPV6
        packet.emit(hdr.inner_ipv6);
#endif
    }
}

#endif  // P4VTEP_PARSER_P4
