// VXLAN decap (ingress) and encap (egress), plus the VF VLAN on local delivery.
#ifndef P4VTEP_TUNNEL_P4
#define P4VTEP_TUNNEL_P4

// Move the tenant's Ethernet header from inner_ethernet into the slot the
// rest of the pipeline switches on and discard the underlay. The parser stops
// at the inner Ethernet header and, for routing, its IP header (nothing after
// decap reads further), so the rest of the tenant frame is payload and stays
// where it is.
// `move_inner_ip`: also move the tenant's IP header (inner_ipv4 or
// inner_ipv6) into hdr.ipv4 / hdr.ipv6, where routing reads it. Tofino does
// it for every frame (its route lookups run beside the MAC lookup, before
// anything knows the frame is routed, and a header move costs it no packet
// rate). BMv2 has two instances: one that moves, for a frame in a VRF's L3
// VNI (symmetric IRB: always routed), and one that does not, so a bridged
// frame never pays for the move and a routed one pays no table apply of its
// own for it (bench/NOTES.md: a table apply is BMv2's unit of cost).
control VxlanDecap(inout headers_t hdr)(bool move_inner_ip) {
    apply {
        hdr.ethernet = hdr.inner_ethernet;
        hdr.inner_ethernet.setInvalid();
        // What a VXLAN packet that passed VTEP termination can hold (an
        // outer IPv6, ARP and TCP cannot be valid in it).
        hdr.vlan.setInvalid();
        hdr.vlan2.setInvalid();
#ifdef P4VTEP_ROUTING
        if (move_inner_ip) {
            // The tenant's IP header, if any (an invalid one invalidates its
            // slot): the outer IPv4 goes with it.
            hdr.ipv4 = hdr.inner_ipv4;
            hdr.inner_ipv4.setInvalid();
#ifdef P4VTEP_IPV6
            hdr.ipv6 = hdr.inner_ipv6;   // (the underlay is IPv4: that slot was empty)
            hdr.inner_ipv6.setInvalid();
#endif
        } else {
            // The tenant's IP header stays in inner_ipv4 (inner_ipv6): the
            // deparser emits it right after the Ethernet header, as the
            // outer headers are invalid.
            hdr.ipv4.setInvalid();
        }
#else
        hdr.ipv4.setInvalid();
#endif
        hdr.udp.setInvalid();
        hdr.vxlan.setInvalid();
    }
}

// Encap puts a new underlay (encap_*) in front of the tenant frame, which
// stays where it is: no header moves, which Tofino's PHV could not do in one
// action, and fewer primitives on BMv2.
control VxlanEncap(inout headers_t hdr,
                   inout local_metadata_t meta,
                   in bit<16> frame_len) {
    // Keyless: the controller sets the default action to this switch's VTEP.
    // The whole encap is this one action (one table apply on BMv2). The
    // frame is always tagged here: access filtering drops untagged frames,
    // and frames from the fabric are never tunnelled again. It travels
    // untagged inside the tunnel.
    action set_local_vtep(ipv4_addr_t vtep_ip, mac_addr_t router_mac) {
        hdr.ethernet.ether_type = hdr.vlan.ether_type;
        hdr.vlan.setInvalid();

        hdr.encap_ethernet.setValid();
        hdr.encap_ethernet.dst_addr = meta.next_hop_mac;
        hdr.encap_ethernet.src_addr = router_mac;
        hdr.encap_ethernet.ether_type = ETHERTYPE_IPV4;

        hdr.encap_ipv4.setValid();
        hdr.encap_ipv4.version_ihl = IPV4_VERSION_IHL_NO_OPTIONS;
        // Outer DSCP copies the inner one (apply fixes YELLOW and non-IPv4).
        hdr.encap_ipv4.tos = hdr.ipv4.dscp ++ 2w0;
        // The frame less its VF tag (4), plus outer IPv4 + UDP + VXLAN
        // (20 + 8 + 8 bytes).
        hdr.encap_ipv4.total_len = frame_len + 32;
        hdr.encap_ipv4.id_flags_frag = 0;
        hdr.encap_ipv4.ttl_protocol = OUTER_TTL ++ IP_PROTO_UDP;
        hdr.encap_ipv4.hdr_checksum = 0;
        hdr.encap_ipv4.src_addr = vtep_ip;
        hdr.encap_ipv4.dst_addr = meta.remote_vtep;

        hdr.encap_udp.setValid();
        // The top two bits set, 14 bits of hash: one deposit on Tofino.
        hdr.encap_udp.src_port = VXLAN_SRC_PORT_TOP_BITS ++ meta.flow_hash[13:0];
        hdr.encap_udp.dst_port = VXLAN_UDP_PORT;
        hdr.encap_udp.length = frame_len + 12;   // - 4 + UDP + VXLAN
        hdr.encap_udp.checksum = 0;   // allowed for IPv4 (RFC 7348 5)

        hdr.encap_vxlan.setValid();
        hdr.encap_vxlan.flags_reserved = VXLAN_FLAG_VNI_VALID ++ 24w0;
        hdr.encap_vxlan.vni_reserved = meta.vni ++ 8w0;
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
            local_vtep.apply();
#ifdef P4VTEP_ROUTING
            if (meta.routed) {
                // Symmetric IRB: the inner source is this ToR's router MAC.
                hdr.ethernet.src_addr = hdr.encap_ethernet.src_addr;
            }
#endif
            if (meta.tx_color == METER_YELLOW) {
                hdr.encap_ipv4.tos = DSCP_YELLOW ++ 2w0;
            } else if (!hdr.ipv4.isValid()) {
                // (the action copied an IPv4 DSCP: IPv6 has its own)
                if (hdr.ipv6.isValid()) {
                    hdr.encap_ipv4.tos = hdr.ipv6.traffic_class[7:2] ++ 2w0;
                } else {
                    hdr.encap_ipv4.tos = 0;
                }
            }
        }
    }
}

// Local delivery: the frame leaves tagged with the receiving VF's VLAN.
control VfTagging(inout headers_t hdr, in local_metadata_t meta) {
    apply {
        // The VLAN in both branches: after the branch it would be a table
        // apply of its own on BMv2.
        if (!hdr.vlan.isValid()) {
            hdr.vlan.setValid();
            hdr.vlan.pcp = 0;
            hdr.vlan.dei = 0;
            hdr.vlan.vid = meta.egress_vlan;
            hdr.vlan.ether_type = hdr.ethernet.ether_type;
            hdr.ethernet.ether_type = ETHERTYPE_VLAN;
        } else {
            hdr.vlan.vid = meta.egress_vlan;
        }
    }
}

#endif  // P4VTEP_TUNNEL_P4
