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

control VxlanEncap(inout headers_t hdr,
                   inout local_metadata_t meta,
                   in standard_metadata_t std) {
    bit<16> inner_frame_len;

    // Keyless: the controller sets the default action to this switch's VTEP.
    action set_local_vtep(ipv4_addr_t vtep_ip, mac_addr_t router_mac) {
        hdr.inner_ethernet = hdr.ethernet;
        hdr.inner_arp = hdr.arp;
        hdr.inner_ipv4 = hdr.ipv4;
        hdr.inner_ipv6 = hdr.ipv6;
        hdr.inner_udp = hdr.udp;
        hdr.inner_tcp = hdr.tcp;
        hdr.arp.setInvalid();
        hdr.ipv6.setInvalid();
        hdr.tcp.setInvalid();

        hdr.ethernet.dst_addr = meta.next_hop_mac;
        hdr.ethernet.src_addr = router_mac;
        hdr.ethernet.ether_type = ETHERTYPE_IPV4;

        hdr.ipv4.setValid();
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = 0;
        // outer IPv4 + UDP + VXLAN = 20 + 8 + 8 bytes
        hdr.ipv4.total_len = inner_frame_len + 36;
        hdr.ipv4.identification = 0;
        hdr.ipv4.flags = 0;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = OUTER_TTL;
        hdr.ipv4.protocol = IP_PROTO_UDP;
        hdr.ipv4.hdr_checksum = 0;
        hdr.ipv4.src_addr = vtep_ip;
        hdr.ipv4.dst_addr = meta.remote_vtep;

        hdr.udp.setValid();
        hdr.udp.src_port = VXLAN_SRC_PORT_BASE | (meta.flow_hash & VXLAN_SRC_PORT_HASH_MASK);
        hdr.udp.dst_port = VXLAN_UDP_PORT;
        hdr.udp.length = inner_frame_len + 16;
        hdr.udp.checksum = 0;   // allowed for IPv4 (RFC 7348 5)

        hdr.vxlan.setValid();
        hdr.vxlan.flags = VXLAN_FLAG_VNI_VALID;
        hdr.vxlan.reserved = 0;
        hdr.vxlan.vni = meta.vni;
        hdr.vxlan.reserved2 = 0;
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
        bit<6> inner_dscp = 0;
        if (hdr.vxlan.isValid()) {
            // A VM's own VXLAN: inner_* is taken, it cannot be tunnelled again.
            meta.drop_reason = DROP_NESTED_VXLAN;
        } else {
            if (hdr.ipv4.isValid()) {
                inner_dscp = hdr.ipv4.dscp;
            }
            inner_frame_len = (bit<16>) std.packet_length;
            if (hdr.vlan.isValid()) {
                // The tenant frame travels untagged inside the tunnel.
                inner_frame_len = inner_frame_len - 4;
                hdr.ethernet.ether_type = hdr.vlan.ether_type;
                hdr.vlan.setInvalid();
            }
            local_vtep.apply();
            if (meta.tx_color == METER_YELLOW) {
                hdr.ipv4.dscp = DSCP_YELLOW;
            } else {
                hdr.ipv4.dscp = inner_dscp;
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
