// p4vtep for Tofino: the same pipeline as ../v1model/p4vtep.p4 on TNA.
// One source for both chips:
//   p4c-tofino --target tofino  --arch tna   (Tofino 1)
//   p4c-tofino --target tofino2 --arch t2na  (Tofino 2)
// The controls, instances, tables, actions and keys are the shared ones in
// ../include/control/, so the P4Info names are v1model's; this file only
// holds what TNA does differently (docs/tofino.md says why for each):
// intrinsic metadata per gress, bridged metadata, drop_ctl, mcast_grp_a/rid,
// qid, the Checksum extern, and the oversize check on IP lengths; and the
// layout of routing (tna/l3_forwarding.p4: lookups beside the MAC lookup,
// the rewrite in egress).
#define P4VTEP_ROUTING   // routing between a tenant's subnets (docs/routing.md)
// Tofino 1's profile (docs/tofino.md, "Profiles"): IPv4 tenants, with port
// security for IPv4 (a guarded VM's IPv6 is dropped: port_security.p4). With
// IPv6 its ingress needs 15 stages at the production sizes and 14 at the
// smallest (dependency depth, not memory); Tofino 2 holds both.
#define P4VTEP_PORT_SECURITY   // port security (port_security.p4, docs/security.md)
#if __TARGET_TOFINO__ == 2
#define P4VTEP_IPV6      // IPv6 tenants: ND suppression, IPv6 routes and gateway
#endif
// The CPU path (cpu_port.p4), on both chips: the punt class in a bridged byte
// of its own and packet_in overlaid on the tunnel headers (bridged.p4,
// VtepEgress) are what let Tofino 2's PHV hold it beside IPv6 and port
// security.
#define P4VTEP_CPU_PATH
#define ROUTE_DECISION_BESIDE_L2   // the route decision inside L2Forwarding's hit branch
#define ND_ANSWER_UNTAGGED         // an answered NS leaves ingress untagged (nd_suppression.p4)
// Port security's lookups run beside access_binding (their keys come from
// the parser), and its checks in the stage of the MAC check: on Tofino 1's
// full ingress it adds no dependency to the chain (port_security.p4).
#ifdef P4VTEP_PORT_SECURITY
#define PORT_SECURITY_BESIDE_BINDING
#endif
// The receive meter of a unicast to a local VM runs in ingress, after the
// L2/L3 decision, so that its colour reaches the traffic manager as the
// frame's drop precedence (packet_color, docs/qos.md). That costs ingress
// stages Tofino 1 does not have (docs/tofino.md, "QoS"): there the meter runs
// in egress, where it drops and counts RED, but the traffic manager has
// already admitted GREEN and YELLOW alike.
#if __TARGET_TOFINO__ == 2
#define RX_POLICING_IN_INGRESS
#else
#define RX_METER_IN_EGRESS   // (policing.p4: one RX meter for unicast and flood copies)
// ...and no colour counters: with them Tofino 1's ingress took 14 of its 12
// stages, however laid out (docs/tofino.md, "QoS on Tofino").
#define NO_COLOR_COUNTERS
#endif

#include <core.p4>
#if __TARGET_TOFINO__ == 2
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "arch.p4"
#include "sizes.p4"
#include "../include/defines.p4"
#include "bridged.p4"
#include "route_result.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "../include/control/port_config.p4"
#include "../include/control/access_filtering.p4"
#include "../include/control/vtep_termination.p4"
#include "../include/control/vni_lookup.p4"
#include "flow_hash.p4"
#include "../include/control/arp_suppression.p4"
#ifdef P4VTEP_IPV6
#include "../include/control/nd_suppression.p4"
#endif
#include "l3_forwarding.p4"   // (before L2Forwarding, which applies RouteDecision)
#include "../include/control/l2_forwarding.p4"
#include "../include/control/underlay.p4"
#include "../include/control/policing.p4"
#include "../include/control/replication.p4"
#include "../include/control/tunnel.p4"
#include "../include/control/cpu_port.p4"
#ifdef P4VTEP_CPU_PATH
#include "punt_decision.p4"
#endif

// The outer IPv4 length of a tenant frame (Ethernet + VF tag + IP) above
// which it is oversize. Ingress on Tofino has no packet length, so the check
// reads the IP lengths; the port MTU set in the MAC catches everything else.
// A drop reason no stage sets (the drop counter has DROP_REASON_COUNT cells).
const drop_reason_t DROP_REASON_NEVER = 255;

const bit<16> MAX_TENANT_IPV4_LEN = (bit<16>) MAX_TENANT_FRAME - 18;
const bit<16> MAX_TENANT_IPV6_PAYLOAD = (bit<16>) MAX_TENANT_FRAME - 18 - 40;


// Tofino does not zero metadata: every field a control may read before
// writing it starts here, in both parsers.
#if defined(PORT_SECURITY_BESIDE_BINDING) && defined(P4VTEP_IPV6)
#define INIT_PORT_SECURITY_METADATA(meta) \
    meta.lla_diff = 0; \
    meta.ll_iid_diff_hi = 0; \
    meta.ll_iid_diff_lo = 0; \
    meta.claim_always_allowed = false;
#elif defined(PORT_SECURITY_BESIDE_BINDING)
#define INIT_PORT_SECURITY_METADATA(meta) \
    meta.lla_diff = 0; \
    meta.ll_iid_diff_hi = 0; \
    meta.ll_iid_diff_lo = 0;
#else
#define INIT_PORT_SECURITY_METADATA(meta)
#endif
// Whether ND suppression took the frame (never without IPv6).
#ifdef P4VTEP_IPV6
#define ND_REPLIED(meta) meta.nd_replied
#else
#define ND_REPLIED(meta) false
#endif
// (punt_class: the l2 trap's class without the CPU path; with it the class
// lives in the bridged byte bridged_punt, PUNT_CLASS in arch.p4.)
#ifdef P4VTEP_CPU_PATH
#define INIT_CPU_PATH_METADATA(meta) \
    meta.from_cpu = false; \
    meta.cpu_flood = false; \
    meta.punt_class = PUNT_CLASS_NONE; \
    meta.bridged_punt.setInvalid();
#define CPU_FLOOD(meta) meta.cpu_flood
#else
#define INIT_CPU_PATH_METADATA(meta) \
    meta.punt_class = PUNT_CLASS_NONE;
#define CPU_FLOOD(meta) false
#endif
#ifdef P4VTEP_IPV6
#define INIT_ND_METADATA(meta) \
    meta.nd_replied = false; \
    meta.nd_own_dad = false; \
    meta.nd_dad = false; \
    meta.nd_target_mac = 0; \
    meta.nd_owner_diff = 0; \
    meta.nd_router = 0;
#else
#define INIT_ND_METADATA(meta)
#endif
#define INIT_METADATA(meta) \
    meta.parser_error = false; \
    meta.checksum_ok = false; \
    meta.port_role = PORT_ROLE_NONE; \
    meta.vni_index = 0; \
    meta.flood_group = 0; \
    meta.src_mac_diff = 0; \
    meta.claimed_ipv4 = 0; \
    meta.claimed_ipv6 = 0; \
    meta.inspect = false; \
    meta.guard_flags = 0; \
    meta.mac_allowed = false; \
    meta.source_refused = false; \
    meta.port_security_class = 0; \
    INIT_PORT_SECURITY_METADATA(meta) \
    meta.rx_color = METER_GREEN; \
    meta.flow_hash = 0; \
    meta.egress_port = 0; \
    meta.mcast_grp = 0; \
    meta.from_fabric = false; \
    meta.src_vlan = 0; \
    meta.src_vm = 0; \
    meta.vni = 0; \
    meta.traffic_class = 0; \
    meta.is_packet_out = false; \
    INIT_CPU_PATH_METADATA(meta) \
    meta.arp_replied = false; \
    INIT_ND_METADATA(meta) \
    meta.dst_vm = 0; \
    meta.egress_vlan = 0; \
    meta.do_encap = false; \
    meta.remote_vtep = 0; \
    meta.next_hop_mac = 0; \
    meta.l4_src_port = 0; \
    meta.l4_dst_port = 0; \
    meta.tx_color = 0; \
    meta.tx_policed = 0; \
    meta.rx_policed = 0; \
    meta.flood_policed = 0; \
    meta.drop_reason = DROP_NONE; \
    meta.vrf = 0; \
    meta.is_l3vni = false; \
    meta.to_router = false; \
    meta.to_gateway = false; \
    meta.routed = false; \
    meta.gateway_mac = 0; \
    meta.route.kind = ROUTE_NONE; \
    meta.route.port = 0; \
    meta.route.vlan_id = 0; \
    meta.route.vm = 0; \
    meta.route.policed = 0; \
    meta.route.vni_index = 0; \
    meta.route.mac = 0; \
    meta.route.vtep_ip = 0; \
    meta.route.l3vni = 0; \
    meta.route.echo_reply = false; \
    meta.route.checksum_inv = 0; \
    meta.route.checksum_change = 0; \
    meta.route.ipv4_checksum = false; \
    meta.route.payload_slack = 0; \
    meta.bridged.setInvalid();

parser VtepIngressParser(packet_in packet,
                         out headers_t hdr,
                         out local_metadata_t meta,
                         out ingress_intrinsic_metadata_t ig_intr_md) {
    VtepHeaderParser() header_parser;

    state start {
        packet.extract(ig_intr_md);
        packet.advance(PORT_METADATA_SIZE);
        INIT_METADATA(meta)
        meta.ingress_port = ig_intr_md.ingress_port;
        header_parser.apply(packet, hdr, meta.parser_error, meta.checksum_ok,
                            ig_intr_md.ingress_port,
                            meta.claimed_ipv4, meta.claimed_ipv6, meta.inspect);
        transition accept;
    }
}

control VtepIngress(inout headers_t hdr,
                    inout local_metadata_t meta,
                    in ingress_intrinsic_metadata_t ig_intr_md,
                    in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                    inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                    inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    PortConfig(PORT_COUNT) port_config;
    AccessFiltering(VM_COUNT, VM_COUNT, ALLOWED_SOURCE_MAC_TABLE_SIZE,
                    IPV4_SOURCE_GUARD_TABLE_SIZE, IPV6_SOURCE_GUARD_TABLE_SIZE) access_filtering;
    VtepTermination(VTEP_TERMINATION_TABLE_SIZE) vtep_termination;
    // Decap moves the tenant's IP header into hdr.ipv4/ipv6 for every frame:
    // the route lookups run beside the MAC lookup, before anything knows the
    // frame is routed, and on Tofino a header move costs no packet rate.
    VxlanDecap(move_inner_ip = true) vxlan_decap;
    VniLookup(VNI_COUNT) vni_lookup;
    FlowHash() flow_hash;
    TxPolicing(VM_COUNT) tx_policing;
    TxColorCount(VM_COUNT) tx_color_count;
#ifdef RX_POLICING_IN_INGRESS
    RxPolicing(VM_COUNT) rx_policing;
#endif
    ArpSuppression(ARP_SUPPRESSION_TABLE_SIZE) arp_suppression;
#ifdef P4VTEP_IPV6
    NdSuppression(ND_SUPPRESSION_TABLE_SIZE) nd_suppression;
#endif
    L2Forwarding(MAC_TABLE_SIZE) l2_forwarding;
    L3Forwarding(HOST_ROUTE_TABLE_SIZE, PREFIX_ROUTE_TABLE_SIZE,
                 IPV6_HOST_ROUTE_TABLE_SIZE, IPV6_PREFIX_ROUTE_TABLE_SIZE) l3_forwarding;
    Underlay(UNDERLAY_ROUTE_TABLE_SIZE, ECMP_MEMBER_COUNT) underlay;
#ifdef P4VTEP_CPU_PATH
    CpuInjection() cpu_injection;
    CpuFlood() cpu_flood;
    PuntDecision(PUNT_POLICY_TABLE_SIZE) punt_decision;
#endif
    PACKET_BYTE_COUNTER(ingress_drop_counter, DROP_REASON_COUNT, drop_reason_t);

    apply {
#ifdef P4VTEP_CPU_PATH
        // Valid from the start: the punt class is written into it where it
        // is decided (an l2 trap, punt_policy).
        meta.bridged_punt.setValid();
        PUNT_CLASS(meta) = PUNT_CLASS_NONE;
        if (hdr.packet_out.isValid() && hdr.packet_out.mode == PACKET_OUT_PORT) {
#else
        if (hdr.packet_out.isValid()) {
#endif
            // Sent by the controller: out of the port it names, untouched.
            meta.egress_port = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            meta.is_packet_out = true;
        } else {
#ifdef P4VTEP_CPU_PATH
            if (hdr.packet_out.isValid()) {
                // Routed or flooded as from a VM (cpu_port.p4), without
                // access filtering or port security. A routed one takes the
                // MAC lookup as a frame from the fabric does: its destination
                // is this ToR's router MAC in the VRF's L3 VNI, whose entry
                // sends it to the router (RouteDecision sits in that branch).
                cpu_injection.apply(hdr, meta);
            } else
#endif
            {
                port_config.apply(meta);
                // Ingress has no packet length: the oversize check reads the IP
                // length. A gateway cannot compare 16 bits with '>' here, so an
                // action computes the excess over the limit (saturating). It needs
                // only parsed headers, so it runs beside the port lookup.
                bit<16> excess = 0;
                if (hdr.ipv4.isValid()) {
                    excess = hdr.ipv4.total_len |-| MAX_TENANT_IPV4_LEN;
                } else if (hdr.ipv6.isValid()) {
                    excess = hdr.ipv6.payload_len |-| MAX_TENANT_IPV6_PAYLOAD;
                }
                // The first reason found is the one counted. The steps are
                // grouped so that few depend on the one before (each dependency
                // is a Tofino stage): docs/tofino.md.
                if (meta.parser_error || ig_prsr_md.parser_err != 0) {
                    if (hdr.udp.isValid() && hdr.udp.dst_port == VXLAN_UDP_PORT) {
                        meta.drop_reason = DROP_BAD_VXLAN;
                    } else {
                        meta.drop_reason = DROP_MALFORMED;
                    }
                } else if (meta.port_role == PORT_ROLE_ACCESS) {
                    access_filtering.apply(hdr, meta, excess != 0);
                } else if (meta.port_role == PORT_ROLE_FABRIC) {
                    vtep_termination.apply(hdr, meta, meta.checksum_ok);
                } else {
                    meta.drop_reason = DROP_UNKNOWN_PORT;
                }
            }
            if (meta.drop_reason == DROP_NONE) {
                vni_lookup.apply(meta);
                if (meta.from_fabric) {
                    vxlan_decap.apply(hdr);
                }
            }
            if (meta.drop_reason == DROP_NONE) {
                // Only a VM with a transmit policy (never a frame from the fabric).
                if (meta.tx_policed == 1) {
                    tx_policing.apply(meta);
                }
                // Not held back by the meter's verdict: a RED packet is still
                // dropped (L2 sees the reason), only the lookups run.
                // ARP and ND suppression look up beside each other (an ARP
                // request and a solicitation exclude each other).
                arp_suppression.apply(hdr, meta);
#ifdef P4VTEP_IPV6
                nd_suppression.apply(hdr, meta);
#endif
                // Beside the MAC lookup: it needs only the VRF and the IP
                // destination (decapsulated by now).
                l3_forwarding.apply(hdr, meta);
                if (!meta.arp_replied && !ND_REPLIED(meta) && !CPU_FLOOD(meta)) {
                    // (a frame sent to the router is decided in its hit branch)
                    l2_forwarding.apply(hdr, meta);
                }
#ifdef P4VTEP_CPU_PATH
                else if (meta.cpu_flood) {
                    cpu_flood.apply(meta);
                }
#endif
                // Last: it reads the headers ARP suppression may rewrite, and
                // only the underlay (next) needs it.
                flow_hash.apply(hdr, meta);
            }
            // A unicast to a local VM with a receive policy: its colour is
            // its drop precedence at the server's port (flood copies: egress).
#ifdef RX_POLICING_IN_INGRESS
            if (meta.drop_reason == DROP_NONE && meta.rx_policed == 1) {
                rx_policing.apply(meta);
            }
#endif
            if (meta.drop_reason == DROP_NONE && meta.do_encap) {
                underlay.apply(meta);
            }
        }
        // The TX colour, counted last: its index is known after the meter,
        // but the stages after the meter have no SRAM left for its cells.
        // (The test of the final drop reason, true for every reason, is what
        // places it here: it must wait for the last writer of drop_reason.)
        if (meta.tx_policed == 1 && meta.drop_reason != DROP_REASON_NEVER) {
            tx_color_count.apply(meta);
        }
        if (meta.drop_reason != DROP_NONE) {
            // Counted under its reason whether it is punted or dropped.
            COUNT(ingress_drop_counter, meta.drop_reason);
#ifdef P4VTEP_CPU_PATH
            if (meta.from_cpu) {
                ig_dprsr_md.drop_ctl = 1;   // never punted back
            } else {
                punt_decision.apply(meta, ig_dprsr_md, ig_tm_md);
            }
#else
            ig_dprsr_md.drop_ctl = 1;
#endif
        } else if (meta.mcast_grp != 0) {
            // Copies get the replica ids of the group's nodes (egress_rid).
            ig_tm_md.mcast_grp_a = meta.mcast_grp;
        } else {
            ig_tm_md.ucast_egress_port = meta.egress_port;
        }
        // Every frame of a VNI takes its class's queue; what the queue admits
        // when congested is the traffic manager's, by colour (the queues'
        // colour drop limits: docs/qos.md). The colour handed over is the
        // meter's of the VM whose policy is about the link (what COMMITTED in
        // policing.p4 tests on BMv2: TNA's colours are the TM's), YELLOW
        // when that VM has no policy; flood copies are admitted once for
        // all, as YELLOW. RED never gets here. Nested single-field tests:
        // p4c-tofino's gateways take no condition as complex as COMMITTED.
        // (Tofino 1: the receive colour is not known yet; rx_color is still
        // METER_GREEN, as initialised, for every frame to a policed VM.)
        ig_tm_md.qid = (QueueId_t) meta.traffic_class;
        ig_tm_md.packet_color = METER_YELLOW;
        if (meta.mcast_grp == 0) {
            if (meta.do_encap) {
                if (meta.tx_policed == 1) {
                    ig_tm_md.packet_color = meta.tx_color;
                }
            } else if (meta.rx_policed == 1) {
                ig_tm_md.packet_color = meta.rx_color;
            }
        }

        meta.bridged.setValid();
        meta.bridged.is_packet_out = (bit<1>) meta.is_packet_out;
        meta.bridged.from_fabric = (bit<1>) meta.from_fabric;
        meta.bridged.do_encap = (bit<1>) meta.do_encap;
        meta.bridged.ingress_port = meta.ingress_port;
        meta.bridged.src_vlan = meta.src_vlan;
        meta.bridged.egress_vlan = meta.egress_vlan;
        meta.bridged.vni = meta.vni;
        meta.bridged.vni_index = meta.vni_index;
        meta.bridged.dst_vm = meta.dst_vm;
        meta.bridged.remote_vtep = meta.remote_vtep;
        meta.bridged.next_hop_mac = meta.next_hop_mac;
        meta.bridged.flow_hash = meta.flow_hash;
        meta.bridged.tx_color = meta.tx_color;
#ifndef RX_POLICING_IN_INGRESS
        meta.bridged.rx_policed = (bit<8>) meta.rx_policed;
#endif
        meta.bridged.routed = (bit<1>) meta.routed;
        meta.bridged.echo_reply = (bit<1>) meta.route.echo_reply;
        meta.bridged.gateway_mac = meta.gateway_mac;
        // ND suppression's answer, built in egress (NdAdvert). An answered
        // solicitation is never routed, so the target's MAC rides in the
        // routed frame's destination MAC field (bridged.p4).
#ifdef P4VTEP_IPV6
        if (meta.nd_replied && !meta.nd_own_dad) {
            meta.bridged.nd_advert = 1;
            meta.bridged.route_mac = meta.nd_target_mac;
        } else {
            meta.bridged.nd_advert = 0;
            meta.bridged.route_mac = meta.route.mac;
        }
        meta.bridged.nd_dad = (bit<1>) meta.nd_dad;
        meta.bridged.nd_router = meta.nd_router;
#else
        meta.bridged.route_mac = meta.route.mac;
#endif
    }
}

control VtepIngressDeparser(packet_out packet,
                            inout headers_t hdr,
                            in local_metadata_t meta,
                            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    VtepHeaderDeparser() header_deparser;

    apply {
#ifdef P4VTEP_CPU_PATH
        packet.emit(meta.bridged_punt);
#endif
        packet.emit(meta.bridged);
        header_deparser.apply(packet, hdr);
    }
}

// Egress re-parses only what egress touches: the VF tag, the IPv4 DSCP, and
// a VM's own VXLAN (which cannot be tunnelled again). The rest of the frame
// is payload, so the parse depth stays within the egress parser's budget.
parser VtepEgressParser(packet_in packet,
                        out headers_t hdr,
                        out local_metadata_t meta,
                        out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        packet.extract(eg_intr_md);
        INIT_METADATA(meta)
        meta.ingress_port = 0;
#ifdef P4VTEP_CPU_PATH
        packet.extract(meta.bridged_punt);
#endif
        packet.extract(meta.bridged);
        meta.is_packet_out = (bool) meta.bridged.is_packet_out;
        meta.from_fabric = (bool) meta.bridged.from_fabric;
        meta.do_encap = (bool) meta.bridged.do_encap;
        meta.src_vlan = meta.bridged.src_vlan;
        meta.egress_vlan = meta.bridged.egress_vlan;
        meta.vni = meta.bridged.vni;
        meta.vni_index = meta.bridged.vni_index;
        meta.dst_vm = meta.bridged.dst_vm;
        meta.remote_vtep = meta.bridged.remote_vtep;
        meta.next_hop_mac = meta.bridged.next_hop_mac;
        meta.flow_hash = meta.bridged.flow_hash;
        meta.tx_color = meta.bridged.tx_color;
#ifndef RX_POLICING_IN_INGRESS
        meta.rx_policed = meta.bridged.rx_policed[0:0];
#endif
        meta.routed = (bool) meta.bridged.routed;
        meta.route.echo_reply = (bool) meta.bridged.echo_reply;
        meta.route.mac = meta.bridged.route_mac;
        meta.gateway_mac = meta.bridged.gateway_mac;
#ifdef P4VTEP_IPV6
        meta.nd_replied = (bool) meta.bridged.nd_advert;
        meta.nd_dad = (bool) meta.bridged.nd_dad;
        meta.nd_router = meta.bridged.nd_router;
        meta.nd_target_mac = meta.bridged.route_mac;   // (when nd_advert)
#endif
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            // Both tag types, as ingress: encap strips the VF tag.
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_QINQ: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_tagged_ipv6;
            default: accept;
        }
    }

    // A tagged IPv6 frame is never an advert to build: ingress strips the
    // tag of an answered solicitation (nd_reply, ND_ANSWER_UNTAGGED), so
    // that the longest path here (bridged header, VLAN, IPv6, ICMPv6, ND and
    // its option) stays within Tofino's 160-byte parse depth.
    state parse_tagged_ipv6 {
        packet.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_ICMPV6: parse_icmp;   // the echo reply
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            (5, 0, IP_PROTO_ICMP): parse_icmp;   // the gateway's echo reply
            default: accept;
        }
    }

    state parse_icmp {
        packet.extract(hdr.icmp);
        transition accept;
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_UDP: parse_udp;
            IP_PROTO_ICMPV6: parse_icmpv6;   // the echo reply and the NA
            default: accept;
        }
    }

    state parse_icmpv6 {
        packet.extract(hdr.icmp);
#ifdef P4VTEP_IPV6
        transition select(hdr.icmp.type_code) {
            ICMPV6_NS: parse_nd;
            default: accept;
        }
    }

    state parse_nd {
        packet.extract(hdr.nd);
        transition select(hdr.ipv6.payload_len) {
            ND_LEN_ONE_OPTION: parse_nd_option;
            default: accept;
        }
    }

    state parse_nd_option {
        packet.extract(hdr.nd_option);
#endif
        transition accept;
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            VXLAN_UDP_PORT: parse_vxlan;
            default: accept;
        }
    }

    state parse_vxlan {
        packet.extract(hdr.vxlan);
        transition accept;
    }
}

// packet_in is built only for a frame to the CPU port, which leaves egress
// before anything encapsulates; the tunnel headers are built only after that.
// So packet_in's own fields may share containers with theirs (the compiler
// does not see it: both headers are made valid in egress, not parsed).
// Not its vni and vlan: the compiler makes them the egress metadata vni and
// src_vlan (an alias), live for every frame; nor the tunnel's destination
// MAC and IPv4 address, which are the bridged next_hop_mac and remote_vtep.
#ifdef P4VTEP_CPU_PATH
#define PACKET_IN_EXCLUSIVE_WITH(field) \
    @pa_mutually_exclusive("egress", "hdr.packet_in._pad", field) \
    @pa_mutually_exclusive("egress", "hdr.packet_in.ingress_port", field) \
    @pa_mutually_exclusive("egress", "hdr.packet_in.reason", field) \
    @pa_mutually_exclusive("egress", "hdr.packet_in._pad2", field)
PACKET_IN_EXCLUSIVE_WITH("hdr.encap_ethernet.src_addr")
PACKET_IN_EXCLUSIVE_WITH("hdr.encap_ipv4.total_len")
PACKET_IN_EXCLUSIVE_WITH("hdr.encap_ipv4.hdr_checksum")
PACKET_IN_EXCLUSIVE_WITH("hdr.encap_ipv4.src_addr")
PACKET_IN_EXCLUSIVE_WITH("hdr.encap_udp.src_port")
PACKET_IN_EXCLUSIVE_WITH("hdr.encap_udp.length")
PACKET_IN_EXCLUSIVE_WITH("hdr.encap_vxlan.vni_reserved")
#endif
control VtepEgress(inout headers_t hdr,
                   inout local_metadata_t meta,
                   in egress_intrinsic_metadata_t eg_intr_md,
                   in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                   inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                   inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    Replication(REPLICA_TABLE_SIZE) replication;
    VxlanEncap() vxlan_encap;
#ifndef RX_POLICING_IN_INGRESS
    RxPolicing(VM_COUNT) rx_policing;   // (unicast: RED dropped here, the queue stands)
#endif
    RxDelivery(VM_COUNT, VNI_COUNT) rx_delivery;
    VfTagging() vf_tagging;
    RoutedRewrite() routed_rewrite;
#ifdef P4VTEP_IPV6
    NdAdvert() nd_advert;
#endif
#ifdef P4VTEP_CPU_PATH
    CpuPort() cpu_port;
#endif
    PACKET_BYTE_COUNTER(port_tx_counter, PORT_COUNT, port_t);
    PACKET_BYTE_COUNTER(egress_drop_counter, DROP_REASON_COUNT, drop_reason_t);

    apply {
        // Copied here, not in the parser: packet_in.ingress_port sits at
        // another bit alignment than the bridged field, which only an action
        // can shift.
        meta.ingress_port = meta.bridged.ingress_port;
        if (meta.is_packet_out) {
            COUNT(port_tx_counter, eg_intr_md.egress_port);
            exit;
        }
        if (eg_intr_md.egress_port == CPU_PORT) {
#ifndef P4VTEP_CPU_PATH
            // (The profile without the CPU path: an l2 trap's frame only.)
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = meta.ingress_port;
            hdr.packet_in.reason = PUNT_CLASS_L2_TRAP;
            hdr.packet_in._pad = 0;
#else
            if (PUNT_CLASS(meta) == PUNT_CLASS_NONE) {
                // Not punted: a packet-out answered back where it came from
                // (an echo request it routed to a gateway; ingress never
                // gives a frame from the CPU a class), never sent back.
                eg_dprsr_md.drop_ctl = 1;
                COUNT(egress_drop_counter, DROP_TO_GATEWAY);
            } else {
                bool copp_drop;
                cpu_port.apply(hdr, meta, copp_drop);
                if (copp_drop) {
                    eg_dprsr_md.drop_ctl = 1;
                }
            }
#endif
            exit;
        }
        if (eg_intr_md.egress_rid != 0) {
            replication.apply(meta, eg_intr_md.egress_port, eg_intr_md.egress_rid);
        }
        if (meta.routed || meta.route.echo_reply) {
            routed_rewrite.apply(hdr, meta);
        }
#ifdef P4VTEP_IPV6
        if (meta.nd_replied) {
            nd_advert.apply(hdr, meta);
            // The pseudo-header's next header (58) as a 16-bit word for the
            // deparser's checksum, which takes no constants.
            meta.route.checksum_change = (bit<16>) IP_PROTO_ICMPV6;
        }
#endif
        if (meta.drop_reason == DROP_NONE) {
            if (meta.do_encap) {
                // pkt_length counts the bridged header ingress put in front.
                vxlan_encap.apply(hdr, meta,
                    eg_intr_md.pkt_length - (bit<16>) BRIDGED_BYTES(meta));
            } else {
#ifndef RX_POLICING_IN_INGRESS
                if ((meta.rx_policed == 1 && eg_intr_md.egress_rid == 0) ||
                    meta.flood_policed == 1) {
                    rx_policing.apply(meta);
                }
#endif
                rx_delivery.apply(meta);
                if (meta.drop_reason == DROP_NONE) {
                    vf_tagging.apply(hdr, meta);
                }
            }
        }
        if (meta.drop_reason != DROP_NONE) {
            eg_dprsr_md.drop_ctl = 1;
            COUNT(egress_drop_counter, meta.drop_reason);
        } else {
            COUNT(port_tx_counter, eg_intr_md.egress_port);
        }
    }
}

control VtepEgressDeparser(packet_out packet,
                           inout headers_t hdr,
                           in local_metadata_t meta,
                           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    Checksum() routed_checksum;
    Checksum() echo_checksum;
#ifdef P4VTEP_IPV6
    Checksum() nd_checksum;
#endif
    VtepHeaderDeparser() header_deparser;

    apply {
        // RoutedRewrite's changes, added to the old checksum (RFC 1624 eqn. 3:
        // new = ~(~old + ~m + m')): TTL - 1 takes 0x0100 off its word; the
        // echo reply takes 0x0800 off the ICMP type word.
        if (meta.route.ipv4_checksum) {
            hdr.ipv4.hdr_checksum = routed_checksum.update(
                { meta.route.checksum_inv, meta.route.checksum_change });
        }
        if (meta.route.echo_reply) {
            hdr.icmp.checksum = echo_checksum.update(
                { meta.route.checksum_inv, meta.route.checksum_change });
        }
#ifdef P4VTEP_IPV6
        // The Neighbor Advertisement NdAdvert built: the pseudo-header (its
        // zero words add nothing) and every byte of the message.
        if (meta.nd_replied) {
            hdr.icmp.checksum = nd_checksum.update(
                { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.payload_len,
                  meta.route.checksum_change, hdr.icmp.type_code,
                  hdr.nd.flags, hdr.nd.target,
                  hdr.nd_option.type, hdr.nd_option.length, hdr.nd_option.addr });
        }
#endif
        // Only a header this switch built; a VM's own header is left as sent.
        if (hdr.encap_ipv4.isValid()) {
            hdr.encap_ipv4.hdr_checksum = ipv4_checksum.update(
                { hdr.encap_ipv4.version_ihl, hdr.encap_ipv4.tos, hdr.encap_ipv4.total_len,
                  hdr.encap_ipv4.id_flags_frag, hdr.encap_ipv4.ttl_protocol,
                  hdr.encap_ipv4.src_addr, hdr.encap_ipv4.dst_addr });
        }
        packet.emit(hdr.packet_in);
        packet.emit(hdr.encap_ethernet);
        packet.emit(hdr.encap_ipv4);
        packet.emit(hdr.encap_udp);
        packet.emit(hdr.encap_vxlan);
        header_deparser.apply(packet, hdr);
    }
}

Pipeline(VtepIngressParser(),
         VtepIngress(),
         VtepIngressDeparser(),
         VtepEgressParser(),
         VtepEgress(),
         VtepEgressDeparser()) pipe;

Switch(pipe) main;
