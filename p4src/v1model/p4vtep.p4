// p4vtep: top-of-rack VXLAN VTEP for BMv2 simple_switch_grpc (v1model).
//
// Ingress: port role -> access filtering or VTEP termination (+ decap) -> VNI
// -> TX policing -> ARP suppression -> L2 (-> L3) -> RX policing (unicast to a
// local VM) -> flow hash -> underlay (ECMP) -> queue admission (unicast).
// Egress: flood replica -> VXLAN encap, or flood RX policing + VF tagging.
// docs/pipeline.md walks through every table.
#include <core.p4>
// Routing between a tenant's subnets (l3_forwarding.p4, docs/routing.md), and
// IPv6 tenants on top of it (ND suppression, IPv6 routes and gateway). The
// shared controls hold each under its switch: without them they are the L2
// (IPv4-only routed) pipeline, unchanged.
#define P4VTEP_ROUTING
#define P4VTEP_IPV6
// Port security (port_security.p4, docs/security.md): a VM sends only as itself.
// (-DP4VTEP_WITHOUT_PORT_SECURITY: the same program without its lookups and
// checks, which bench/dataplane_instructions.py compiles to weigh them.)
#ifndef P4VTEP_WITHOUT_PORT_SECURITY
#define P4VTEP_PORT_SECURITY
#endif
// The CPU path (cpu_port.p4, docs/pipeline.md): punts policed per class,
// packet-outs routed or flooded as from a VM.
#define P4VTEP_CPU_PATH
// The v1model whose counters and meters take their index type (arch.p4).
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#include "arch.p4"
#include "sizes.p4"
#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "../include/control/port_config.p4"
#include "../include/control/port_security.p4"
#include "../include/control/access_filtering.p4"
#include "../include/control/vtep_termination.p4"
#include "../include/control/vni_lookup.p4"
#include "flow_hash.p4"
#include "../include/control/arp_suppression.p4"
#include "../include/control/nd_suppression.p4"
#include "../include/control/l2_forwarding.p4"
#include "../include/control/l3_forwarding.p4"
#include "../include/control/underlay.p4"
#include "../include/control/policing.p4"
#include "../include/control/replication.p4"
#include "../include/control/tunnel.p4"
#include "../include/control/cpu_port.p4"
#include "queue_admission.p4"

parser VtepParser(packet_in packet,
                  out headers_t hdr,
                  inout local_metadata_t meta,
                  inout standard_metadata_t std) {
    VtepHeaderParser() header_parser;

    state start {
        meta.ingress_port = std.ingress_port;
        // The headers are inout there (arch.p4): p4c warns they may be
        // uninitialized, but every header is invalid when a packet starts.
        header_parser.apply(packet, hdr, meta.parser_error, std.ingress_port,
                            meta.claimed_ipv4, meta.claimed_ipv6, meta.inspect);
        transition accept;
    }
}

control VtepVerifyChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        // Only the underlay header of VXLAN matters (fabric ingress checks
        // it; anything else sent to the VTEP is dropped whatever its
        // checksum); a header with options is left alone. A tenant's IPv4
        // header is not checked: that would be a checksum per frame for
        // nothing.
        verify_checksum(hdr.vxlan.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control VtepIngress(inout headers_t hdr,
                    inout local_metadata_t meta,
                    inout standard_metadata_t std) {
    PortConfig(PORT_COUNT) port_config;
    AccessFiltering(VM_COUNT, VM_COUNT, ALLOWED_SOURCE_MAC_TABLE_SIZE,
                    IPV4_SOURCE_GUARD_TABLE_SIZE, IPV6_SOURCE_GUARD_TABLE_SIZE) access_filtering;
    VtepTermination(VTEP_TERMINATION_TABLE_SIZE) vtep_termination;
    // A frame in a VRF's L3 VNI is routed: its decap moves the tenant's IP
    // header where routing reads it (tunnel.p4); a bridged one's does not.
    VxlanDecap(move_inner_ip = false) vxlan_decap;
    VxlanDecap(move_inner_ip = true) routed_decap;
    VniLookup(VNI_COUNT) vni_lookup;
    FlowHash() flow_hash;
    TxPolicing(VM_COUNT) tx_policing;
    TxColorCount(VM_COUNT) tx_color_count;
    RxPolicing(VM_COUNT) rx_policing;
    ArpSuppression(ARP_SUPPRESSION_TABLE_SIZE) arp_suppression;
    NdSuppression(ND_SUPPRESSION_TABLE_SIZE) nd_suppression;
    NdAdvert() nd_advert;
    L2Forwarding(MAC_TABLE_SIZE) l2_forwarding;
    L3Forwarding(HOST_ROUTE_TABLE_SIZE, PREFIX_ROUTE_TABLE_SIZE,
                 IPV6_HOST_ROUTE_TABLE_SIZE, IPV6_PREFIX_ROUTE_TABLE_SIZE) l3_forwarding;
    Underlay(UNDERLAY_ROUTE_TABLE_SIZE, ECMP_MEMBER_COUNT) underlay;
    QueueAdmission() queue_admission;
    CpuInjection() cpu_injection;
    CpuFlood() cpu_flood;
    PuntDecision(PUNT_POLICY_TABLE_SIZE) punt_decision;
    PACKET_BYTE_COUNTER(ingress_drop_counter, DROP_REASON_COUNT, drop_reason_t);

    apply {
        // Every packet leaves ingress with its egress_spec and mcast_grp set
        // below, or marked to drop: no mark_to_drop up front (on BMv2 it
        // would cost a table apply per packet).
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.mode == PACKET_OUT_PORT) {
                // Sent by the controller: out of the port it names, untouched.
                std.egress_spec = hdr.packet_out.egress_port;
                hdr.packet_out.setInvalid();
                meta.is_packet_out = true;
                exit;
            }
            // Routed or flooded as from a VM (cpu_port.p4); no access
            // filtering, no port security.
            cpu_injection.apply(hdr, meta);
        } else {
            port_config.apply(meta);
            // The first reason found is the one counted. The steps are grouped so
            // that few depend on the one before (each dependency is a Tofino
            // stage): docs/tofino.md.
            if (meta.parser_error || std.parser_error != error.NoError) {
                if (hdr.udp.isValid() && hdr.udp.dst_port == VXLAN_UDP_PORT) {
                    meta.drop_reason = DROP_BAD_VXLAN;
                } else {
                    meta.drop_reason = DROP_MALFORMED;
                }
            } else if (meta.port_role == PORT_ROLE_ACCESS) {
                access_filtering.apply(hdr, meta, std.packet_length > MAX_TENANT_FRAME);
            } else if (meta.port_role == PORT_ROLE_FABRIC) {
                vtep_termination.apply(hdr, meta, std.checksum_error == 0);
            } else {
                meta.drop_reason = DROP_UNKNOWN_PORT;
            }
        }
        if (meta.drop_reason == DROP_NONE) {
            vni_lookup.apply(meta);
            if (meta.from_fabric) {
                if (meta.is_l3vni) {
                    routed_decap.apply(hdr);
                } else {
                    vxlan_decap.apply(hdr);
                }
            }
        }
        if (meta.drop_reason == DROP_NONE) {
            // Only a VM with a transmit policy (never a frame from the fabric).
            if (meta.tx_policed == 1) {
                tx_policing.apply(meta);
                tx_color_count.apply(meta);
            }
            // Not held back by the meter's verdict: a RED packet is still
            // dropped (L2 sees the reason), only the lookups run.
            // Only what the parser flagged (ARP, ICMPv6, a DHCP server
            // message) can be an ARP request or a Neighbor Solicitation: one
            // condition for any other frame instead of one per protocol.
            if (meta.inspect) {
                arp_suppression.apply(hdr, meta);
                if (hdr.nd.isValid()) {
                    nd_suppression.apply(hdr, meta);
                    if (meta.nd_replied && !meta.nd_own_dad) {
                        nd_advert.apply(hdr, meta);
                    }
                }
            }
            // A packet-out skips the MAC lookup: its mode decided (ROUTE
            // set to_router, FLOOD floods). (One condition for both, which a
            // frame to a VM meets anyway.)
            if (!meta.arp_replied && !meta.nd_replied && !meta.from_cpu) {
                l2_forwarding.apply(hdr, meta);
            } else if (meta.cpu_flood) {
                cpu_flood.apply(meta);
            }
            // (Dropped already, by the TX meter: the first reason stands.)
            if (meta.to_router && meta.drop_reason == DROP_NONE) {
                l3_forwarding.apply(hdr, meta);
            }
        }
        // A unicast to a local VM with a receive policy: its colour says what
        // the server's port admits (flood copies are metered in egress).
        if (meta.drop_reason == DROP_NONE && meta.rx_policed == 1) {
            rx_policing.apply(meta);
        }
        // Only what may be tunnelled needs the flow hash (ECMP member, outer
        // UDP port): a unicast to a remote VTEP, or a flood from a local VM
        // (egress drops fabric BUM's copies toward VTEPs). After ARP
        // suppression, whose rewrite it must see. On BMv2 the hash costs two
        // table applies and a CRC32, so local switching and decap skip it
        // (Tofino computes it for every packet: it is free there and gating
        // it would cost a stage).
        if (meta.drop_reason == DROP_NONE &&
            (meta.do_encap || (meta.mcast_grp != 0 && !meta.from_fabric))) {
            flow_hash.apply(hdr, meta);
        }
        if (meta.drop_reason == DROP_NONE && meta.do_encap) {
            underlay.apply(meta);
        }
        if (meta.drop_reason != DROP_NONE) {
            // Counted under its reason whether it is punted or dropped.
            COUNT(ingress_drop_counter, meta.drop_reason);
            punt_decision.apply(meta);
            if (meta.punt_class != PUNT_CLASS_NONE) {
                std.egress_spec = CPU_PORT;
                std.mcast_grp = 0;
            } else {
                mark_to_drop(std);
            }
        } else {
            std.egress_spec = meta.egress_port;
            std.mcast_grp = meta.mcast_grp;
            std.priority = meta.traffic_class;
            // A unicast's queue takes in excess only while it is not congested.
            queue_admission.apply(meta);
            if (QUEUE_CONGESTED_FOR(meta)) {
                mark_to_drop(std);
                COUNT(ingress_drop_counter, DROP_EXCESS_CONGESTED);
            }
        }
    }
}

control VtepEgress(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std) {
    QueueDeparted() queue_departed;
    Replication(REPLICA_TABLE_SIZE) replication;
    VxlanEncap() vxlan_encap;
    RxDelivery(VM_COUNT, VNI_COUNT) rx_delivery;
    VfTagging() vf_tagging;
    CpuPort() cpu_port;
    PACKET_BYTE_COUNTER(port_tx_counter, PORT_COUNT, port_t);
    PACKET_BYTE_COUNTER(egress_drop_counter, DROP_REASON_COUNT, drop_reason_t);

    apply {
        if (meta.is_packet_out) {
            queue_departed.apply(std, meta);
            COUNT(port_tx_counter, std.egress_port);
            exit;
        }
        if (std.egress_port == CPU_PORT) {
            queue_departed.apply(std, meta);
            if (meta.from_cpu) {
                // A packet-out answered back where it came from (an echo
                // request it routed to a gateway): never punted back.
                mark_to_drop(std);
                COUNT(egress_drop_counter, DROP_TO_GATEWAY);
            } else {
                bool copp_drop;
                cpu_port.apply(hdr, meta, copp_drop);
                if (copp_drop) {
                    mark_to_drop(std);
                } else if (meta.punt_class != PUNT_CLASS_TO_GATEWAY) {
                    // The controller quotes the start of it (an ICMP error).
                    // A frame to a gateway address comes whole: the
                    // responder answers an echo request with its data, and
                    // reassembles one that came in full-size fragments.
                    truncate(PUNT_TRUNCATE_BYTES);
                }
            }
            exit;
        }
        if (std.egress_rid != 0) {
            replication.apply(meta, std.egress_port, std.egress_rid);
        }
        if (meta.drop_reason == DROP_NONE) {
            if (meta.do_encap) {
                vxlan_encap.apply(hdr, meta, (bit<16>) std.packet_length);
            } else {
                rx_delivery.apply(meta);
                if (meta.drop_reason == DROP_NONE) {
                    vf_tagging.apply(hdr, meta);
                }
            }
        }
        if (meta.drop_reason != DROP_NONE) {
            queue_departed.apply(std, meta);
            mark_to_drop(std);
            COUNT(egress_drop_counter, meta.drop_reason);
        } else {
            queue_departed.apply(std, meta);
            COUNT(port_tx_counter, std.egress_port);
        }
    }
}

control VtepComputeChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        // The Neighbor Advertisement ND suppression built: every byte of it
        // is a parsed header, after the pseudo-header (RFC 4443 2.3: source,
        // destination, 32-bit length, 24 zero bits, next header 58).
        update_checksum(meta.nd_replied && !meta.nd_own_dad,
            { hdr.ipv6.src_addr, hdr.ipv6.dst_addr, 16w0, hdr.ipv6.payload_len,
              24w0, IP_PROTO_ICMPV6, hdr.icmp.type_code,
              hdr.nd.flags, hdr.nd.target,
              hdr.nd_option.type, hdr.nd_option.length, hdr.nd_option.addr },
            hdr.icmp.checksum, HashAlgorithm.csum16);
        // Only a header this switch built; a VM's own header is left as sent.
        update_checksum(hdr.encap_ipv4.isValid(),
            { hdr.encap_ipv4.version_ihl, hdr.encap_ipv4.tos, hdr.encap_ipv4.total_len,
              hdr.encap_ipv4.id_flags_frag, hdr.encap_ipv4.ttl_protocol,
              hdr.encap_ipv4.src_addr, hdr.encap_ipv4.dst_addr },
            hdr.encap_ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control VtepDeparser(packet_out packet, in headers_t hdr) {
    VtepHeaderDeparser() header_deparser;

    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.encap_ethernet);
        packet.emit(hdr.encap_ipv4);
        packet.emit(hdr.encap_udp);
        packet.emit(hdr.encap_vxlan);
        header_deparser.apply(packet, hdr);
    }
}

V1Switch(VtepParser(),
         VtepVerifyChecksum(),
         VtepIngress(),
         VtepEgress(),
         VtepComputeChecksum(),
         VtepDeparser()) main;
