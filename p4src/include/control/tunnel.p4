// VXLAN decap (ingress) and encap (egress), plus the VF VLAN on local delivery.
#ifndef P4VTEP_TUNNEL_P4
#define P4VTEP_TUNNEL_P4

// Move the tenant frame from inner_* into the slots the rest of the pipeline
// switches on; the underlay headers are discarded.
control VxlanDecap(inout headers_t hdr) {
    apply {
        hdr.ethernet = hdr.inner_ethernet;
        hdr.arp = hdr.inner_arp;
        hdr.ipv4 = hdr.inner_ipv4;
        hdr.ipv6 = hdr.inner_ipv6;
        hdr.udp = hdr.inner_udp;
        hdr.tcp = hdr.inner_tcp;
        hdr.vlan.setInvalid();
        hdr.vlan2.setInvalid();
        hdr.vxlan.setInvalid();
        hdr.inner_ethernet.setInvalid();
        hdr.inner_arp.setInvalid();
        hdr.inner_ipv4.setInvalid();
        hdr.inner_ipv6.setInvalid();
        hdr.inner_udp.setInvalid();
        hdr.inner_tcp.setInvalid();
    }
}

// Encap puts a new underlay (encap_*) in front of the tenant frame, which
// stays where it is: no header moves, which Tofino's PHV could not do in one
// action, and fewer primitives on BMv2.
control VxlanEncap(inout headers_t hdr,
                   inout local_metadata_t meta,
                   in bit<16> frame_len) {
    bit<16> inner_frame_len;

    // Keyless: the controller sets the default action to this switch's VTEP.
    action set_local_vtep(ipv4_addr_t vtep_ip, mac_addr_t router_mac) {
        hdr.encap_ethernet.setValid();
        hdr.encap_ethernet.dst_addr = meta.next_hop_mac;
        hdr.encap_ethernet.src_addr = router_mac;
        hdr.encap_ethernet.ether_type = ETHERTYPE_IPV4;

        hdr.encap_ipv4.setValid();
        hdr.encap_ipv4.version = 4;
        hdr.encap_ipv4.ihl = 5;
        hdr.encap_ipv4.ecn = 0;
        // outer IPv4 + UDP + VXLAN = 20 + 8 + 8 bytes
        hdr.encap_ipv4.total_len = inner_frame_len + 36;
        hdr.encap_ipv4.identification = 0;
        hdr.encap_ipv4.flags = 0;
        hdr.encap_ipv4.frag_offset = 0;
        hdr.encap_ipv4.ttl = OUTER_TTL;
        hdr.encap_ipv4.protocol = IP_PROTO_UDP;
        hdr.encap_ipv4.hdr_checksum = 0;
        hdr.encap_ipv4.src_addr = vtep_ip;
        hdr.encap_ipv4.dst_addr = meta.remote_vtep;

        hdr.encap_udp.setValid();
        // The top two bits set, 14 bits of hash: one deposit on Tofino.
        hdr.encap_udp.src_port = VXLAN_SRC_PORT_TOP_BITS ++ meta.flow_hash[13:0];
        hdr.encap_udp.dst_port = VXLAN_UDP_PORT;
        hdr.encap_udp.length = inner_frame_len + 16;
        hdr.encap_udp.checksum = 0;   // allowed for IPv4 (RFC 7348 5)

        hdr.encap_vxlan.setValid();
        hdr.encap_vxlan.flags = VXLAN_FLAG_VNI_VALID;
        hdr.encap_vxlan.reserved = 0;
        hdr.encap_vxlan.vni = meta.vni;
        hdr.encap_vxlan.reserved2 = 0;
    }

    action no_local_vtep() {
        meta.drop_reason = DROP_NO_LOCAL_VTEP;
    }

    table local_vtep {
        key = { }
        actions = {
            set_local_vtep;
            no_local_vtep;
        }
        default_action = no_local_vtep();
        size = 1;
    }

    apply {
        if (hdr.vxlan.isValid()) {
            // A VM's own VXLAN is not tunnelled again (one VXLAN level only).
            meta.drop_reason = DROP_NESTED_VXLAN;
        } else {
            inner_frame_len = frame_len;
            if (hdr.vlan.isValid()) {
                // The tenant frame travels untagged inside the tunnel.
                inner_frame_len = inner_frame_len - 4;
                hdr.ethernet.ether_type = hdr.vlan.ether_type;
                hdr.vlan.setInvalid();
            }
            local_vtep.apply();
            if (meta.tx_color == METER_YELLOW) {
                hdr.encap_ipv4.dscp = DSCP_YELLOW;
            } else if (hdr.ipv4.isValid()) {
                hdr.encap_ipv4.dscp = hdr.ipv4.dscp;
            } else {
                hdr.encap_ipv4.dscp = 0;
            }
        }
    }
}

// Local delivery: the frame leaves tagged with the receiving VF's VLAN.
control VfTagging(inout headers_t hdr, in local_metadata_t meta) {
    apply {
        if (!hdr.vlan.isValid()) {
            hdr.vlan.setValid();
            hdr.vlan.pcp = 0;
            hdr.vlan.dei = 0;
            hdr.vlan.ether_type = hdr.ethernet.ether_type;
            hdr.ethernet.ether_type = ETHERTYPE_VLAN;
        }
        hdr.vlan.vid = meta.egress_vlan;
    }
}

#endif  // P4VTEP_TUNNEL_P4
