// Fabric ingress: only VXLAN addressed to one of this switch's VTEP IPs on UDP
// 4789 with a valid VNI flag is accepted; everything else is dropped with the
// reason that explains it.
#ifndef P4VTEP_VTEP_TERMINATION_P4
#define P4VTEP_VTEP_TERMINATION_P4

control VtepTermination(in headers_t hdr,
                        inout local_metadata_t meta,
                        in bool checksum_ok)
                       (bit<32> vtep_table_size) {
    // A hit means "this is one of my VTEP addresses"; the checks below decide
    // whether what was sent to it is acceptable VXLAN. The action already
    // takes the packet as the fabric's (one table apply less on BMv2): if a
    // check fails, the drop reason set means nothing else reads these.
    action terminate() {
        meta.from_fabric = true;
        meta.vni = hdr.vxlan.vni;
#ifdef P4VTEP_ROUTING
        // A VRF's id is its L3 VNI (routing.py): routed frames between ToRs
        // travel in it. (An L2 VNI has no routes under its number.)
        meta.vrf = hdr.vxlan.vni;
#endif
    }

    table my_vtep {
        key = {
            hdr.ipv4.dst_addr : exact @name("vtep_ip");
        }
        actions = {
            terminate;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = vtep_table_size;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            meta.drop_reason = DROP_NOT_IPV4_FABRIC;
        } else if (!my_vtep.apply().hit) {
            // This ToR is a VTEP, not a transit router.
            meta.drop_reason = DROP_NOT_FOR_VTEP;
        } else if (!hdr.udp.isValid() || hdr.udp.dst_port != VXLAN_UDP_PORT) {
            // Before the checksum: v1model verifies it on VXLAN only, so
            // anything else is this reason on every target.
            meta.drop_reason = DROP_WRONG_UDP_PORT;
        } else if (!checksum_ok && hdr.ipv4.ihl == 5) {
            // A header with options is not checked (v1model skips it; the
            // Tofino parser's Checksum covers the fixed 20 bytes only).
            meta.drop_reason = DROP_BAD_CHECKSUM;
        } else if (hdr.ipv4.ttl == 0) {
            meta.drop_reason = DROP_TTL_EXPIRED;
        } else if ((hdr.vxlan.flags & VXLAN_FLAG_VNI_VALID) == 0) {
            meta.drop_reason = DROP_BAD_VXLAN;
        } else if (hdr.inner_ethernet.ether_type == ETHERTYPE_VLAN ||
                   hdr.inner_ethernet.ether_type == ETHERTYPE_QINQ) {
            // RFC 7348 4.1: tagged inner frames are dropped unless configured.
            meta.drop_reason = DROP_BAD_VXLAN;
        }
    }
}

#endif  // P4VTEP_VTEP_TERMINATION_P4
