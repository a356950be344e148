// p4vtep: top-of-rack VXLAN VTEP for BMv2 simple_switch_grpc (v1model).
//
// Ingress: port role -> access filtering or VTEP termination (+ decap) -> VNI
// -> flow hash -> TX policing -> ARP suppression -> L2 -> underlay (ECMP).
// Egress: flood replica -> VXLAN encap or RX policing + VF tagging.
// docs/pipeline.md walks through every table.
#include <core.p4>
#include <v1model.p4>

#include "sizes.p4"
#include "../include/defines.p4"
#include "../include/headers.p4"
#include "../include/parser.p4"
#include "../include/control/port_config.p4"
#include "../include/control/access_filtering.p4"
#include "../include/control/vtep_termination.p4"
#include "../include/control/vni_lookup.p4"
#include "../include/control/flow_hash.p4"
#include "../include/control/arp_suppression.p4"
#include "../include/control/l2_forwarding.p4"
#include "../include/control/underlay.p4"
#include "../include/control/policing.p4"
#include "../include/control/replication.p4"
#include "../include/control/tunnel.p4"

control VtepVerifyChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        // Only the underlay header matters (fabric ingress checks it); a
        // header with options is left alone.
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
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
    AccessFiltering(VM_COUNT, VM_COUNT) access_filtering;
    VtepTermination(VTEP_TERMINATION_TABLE_SIZE) vtep_termination;
    VxlanDecap() vxlan_decap;
    VniLookup(VNI_COUNT) vni_lookup;
    FlowHash() flow_hash;
    TxPolicing(VM_COUNT) tx_policing;
    ArpSuppression(ARP_SUPPRESSION_TABLE_SIZE) arp_suppression;
    L2Forwarding(MAC_TABLE_SIZE) l2_forwarding;
    Underlay(UNDERLAY_ROUTE_TABLE_SIZE, ECMP_MEMBER_COUNT) underlay;
    counter(DROP_REASON_COUNT, CounterType.packets_and_bytes) ingress_drop_counter;

    apply {
        // BMv2 forwards to port 0 unless told otherwise: drop by default.
        mark_to_drop(std);
        if (hdr.packet_out.isValid()) {
            // Sent by the controller: out of the port it names, untouched.
            std.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
            meta.is_packet_out = true;
            exit;
        }
        port_config.apply(meta, std);
        if (std.parser_error != error.NoError) {
            if (hdr.udp.isValid() && hdr.udp.dst_port == VXLAN_UDP_PORT) {
                meta.drop_reason = DROP_BAD_VXLAN;
            } else {
                meta.drop_reason = DROP_MALFORMED;
            }
        }
        if (meta.drop_reason == DROP_NONE) {
            if (meta.port_role == PORT_ROLE_ACCESS) {
                access_filtering.apply(hdr, meta, std);
            } else if (meta.port_role == PORT_ROLE_FABRIC) {
                vtep_termination.apply(hdr, meta, std);
            }
        }
        if (meta.drop_reason == DROP_NONE) {
            vni_lookup.apply(meta, std);
        }
        if (meta.drop_reason == DROP_NONE) {
            if (meta.from_fabric) {
                vxlan_decap.apply(hdr);
            }
            flow_hash.apply(hdr, meta);
            if (!meta.from_fabric) {
                tx_policing.apply(meta, std);
            }
        }
        if (meta.drop_reason == DROP_NONE) {
            arp_suppression.apply(hdr, meta, std);
            if (!meta.arp_replied) {
                l2_forwarding.apply(hdr, meta, std);
            }
        }
        if (meta.drop_reason == DROP_NONE && meta.do_encap) {
            underlay.apply(meta, std);
        }
        if (meta.drop_reason != DROP_NONE) {
            mark_to_drop(std);
            ingress_drop_counter.count((bit<32>) meta.drop_reason);
        }
    }
}

control VtepEgress(inout headers_t hdr,
                   inout local_metadata_t meta,
                   inout standard_metadata_t std) {
    Replication(REPLICA_TABLE_SIZE) replication;
    VxlanEncap() vxlan_encap;
    RxPolicing(VM_COUNT, VNI_COUNT) rx_policing;
    VfTagging() vf_tagging;
    counter(PORT_COUNT, CounterType.packets_and_bytes) port_tx_counter;
    counter(DROP_REASON_COUNT, CounterType.packets_and_bytes) egress_drop_counter;

    apply {
        if (meta.is_packet_out) {
            port_tx_counter.count((bit<32>) std.egress_port);
            exit;
        }
        if (std.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = std.ingress_port;
            hdr.packet_in.reason = PUNT_REASON_L2_TRAP;
            hdr.packet_in._pad = 0;
            exit;
        }
        if (std.egress_rid != 0) {
            replication.apply(meta, std);
        }
        if (meta.drop_reason == DROP_NONE) {
            if (meta.do_encap) {
                vxlan_encap.apply(hdr, meta, std);
            } else {
                rx_policing.apply(meta, std);
                if (meta.drop_reason == DROP_NONE) {
                    vf_tagging.apply(hdr, meta);
                }
            }
        }
        if (meta.drop_reason != DROP_NONE) {
            mark_to_drop(std);
            egress_drop_counter.count((bit<32>) meta.drop_reason);
        } else {
            port_tx_counter.count((bit<32>) std.egress_port);
        }
    }
}

control VtepComputeChecksum(inout headers_t hdr, inout local_metadata_t meta) {
    apply {
        // Only a header this switch built; a VM's own header is left as sent.
        update_checksum(hdr.ipv4.isValid() && meta.do_encap,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

V1Switch(VtepParser(),
         VtepVerifyChecksum(),
         VtepIngress(),
         VtepEgress(),
         VtepComputeChecksum(),
         VtepDeparser()) main;
