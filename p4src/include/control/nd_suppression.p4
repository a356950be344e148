// ND suppression (RFC 9161 3, RFC 4861): a VM's Neighbor Solicitation for an
// IPv6 address the controller knows in its VNI (another VM's, or the
// gateway's global or link-local address) is answered by the switch with a
// Neighbor Advertisement, out of the port and VLAN it asked on. Nothing is
// flooded. The advert is built in place from the solicitation:
// - Ethernet: to the asker's MAC (the frame's source), from the target's MAC;
// - IPv6: from the target address, to the asker, hop limit 255;
// - ICMPv6: type 136, flags R (the target is a router: the gateway), S, O;
//   the same target; one target link-layer address option with its MAC (the
//   solicitation's one option, source address or nonce, is overwritten; a
//   solicitation without options gets it added). The checksum is computed
//   by the target's deparser (VtepComputeChecksum on v1model).
// Duplicate Address Detection (an NS from ::) is never answered for the VM
// that owns the address (the VM would give its address up): it is flooded as
// before. For an address another VM or the gateway owns, the answer defends
// it as RFC 4861 7.2.4 asks: to all-nodes, S clear.
// What is not answered: solicitations from the fabric, with a hop limit
// other than 255 or a code other than 0 (invalid, RFC 4861 7.1.1), with
// more or longer options than one 8-byte one.
#ifndef P4VTEP_ND_SUPPRESSION_P4
#define P4VTEP_ND_SUPPRESSION_P4

// The advert, built from the solicitation ND suppression matched (meta.nd_*).
// v1model builds it right after the lookup; Tofino in egress, where the
// 128-bit moves do not hold back the ingress stages (docs/tofino.md).
control NdAdvert(inout headers_t hdr, in local_metadata_t meta) {
    apply {
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = meta.nd_target_mac;
        hdr.ipv6.dst_addr = hdr.ipv6.src_addr;
        hdr.ipv6.src_addr = hdr.nd.target;
        hdr.ipv6.hop_limit = ND_HOP_LIMIT;
        hdr.ipv6.payload_len = ND_LEN_ONE_OPTION;
        hdr.icmp.type_code = ICMPV6_NA;
        hdr.icmp.checksum = 0;
        hdr.nd_option.setValid();
        hdr.nd_option.type = ND_OPT_TARGET_LLA;
        hdr.nd_option.length = 1;
        hdr.nd_option.addr = meta.nd_target_mac;
        // The flags as constants per case: Tofino cannot move the 1-bit
        // router field into the flags word's top bit (their PHV alignments
        // differ).
        if (meta.nd_dad) {
            // Defending an address against another VM's DAD (RFC 4861 7.2.4).
            hdr.ethernet.dst_addr = MAC_ALL_NODES;
            hdr.ipv6.dst_addr = IPV6_ALL_NODES;
            if (meta.nd_router == 1) {
                hdr.nd.flags = NA_FLAG_ROUTER | NA_FLAG_OVERRIDE;
            } else {
                hdr.nd.flags = NA_FLAG_OVERRIDE;
            }
        } else if (meta.nd_router == 1) {
            hdr.nd.flags = NA_FLAG_ROUTER | NA_FLAG_SOLICITED | NA_FLAG_OVERRIDE;
        } else {
            hdr.nd.flags = NA_FLAG_SOLICITED | NA_FLAG_OVERRIDE;
        }
    }
}

control NdSuppression(inout headers_t hdr,
                      inout local_metadata_t meta)
                     (bit<32> nd_table_size) {
    // Counts every solicitation that found its target: the answered ones
    // and an owner's own DAD probes (flooded unanswered).
    DIRECT_PACKET_BYTE_COUNTER(nd_reply_counter);

    // `router`: 1 for the gateway's addresses (the NA's R flag: 0 would
    // remove the gateway from the VM's default routers, RFC 4861 7.2.5).
    // The answer is decided here, so that the MAC lookup knows at once that
    // it has nothing to do (on Tofino a decision after the table would hold
    // the MAC lookup back a stage); the owner's DAD probe is the exception
    // the apply block below makes.
    action nd_reply(mac_addr_t target_mac, bit<1> router) {
        meta.nd_target_mac = target_mac;
        meta.nd_router = router;
        // The XOR, not the MAC: Tofino compares at most 44 bits of PHV in
        // one condition (as access_filtering's source MAC check).
        meta.nd_owner_diff = target_mac ^ hdr.ethernet.src_addr;
        meta.nd_replied = true;
        meta.egress_port = meta.ingress_port;
        meta.egress_vlan = meta.src_vlan;
        meta.dst_vm = meta.src_vm;
        meta.do_encap = false;
#ifdef ND_ANSWER_UNTAGGED
        // Tofino: the advert leaves ingress without the VF tag (VfTagging
        // puts it back in egress, as for every frame to a VM), which keeps
        // its egress parse within the chip's depth (tna/p4vtep.p4).
        hdr.vlan.setInvalid();
        hdr.ethernet.ether_type = ETHERTYPE_IPV6;
#endif
        DIRECT_COUNT(nd_reply_counter);
    }

    table nd_suppression {
        key = {
            meta.vni      : exact @name("vni");
            hdr.nd.target : exact @name("target_ip");
        }
        actions = {
            nd_reply;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        counters = nd_reply_counter;
        size = nd_table_size;
    }

    apply {
        if (hdr.nd.isValid() && hdr.icmp.type_code == ICMPV6_NS &&
            hdr.ipv6.hop_limit == ND_HOP_LIMIT && !meta.from_fabric &&
            (hdr.ipv6.payload_len == ND_LEN_NO_OPTION ||
             (hdr.nd_option.isValid() && hdr.nd_option.length == 1 &&
              (hdr.nd_option.type == ND_OPT_SOURCE_LLA ||
               hdr.nd_option.type == ND_OPT_NONCE)))) {
            if (nd_suppression.apply().hit) {
                // DAD: a solicitation from ::. Told by its shape, not by the
                // 128-bit source, which Tofino cannot compare: a multicast
                // solicitation carries the asker's link-layer address unless
                // it comes from :: (RFC 4861 4.3, 7.2.2).
                if (hdr.ipv6.dst_addr[127:120] == 8w0xff &&
                    !(hdr.nd_option.isValid() && hdr.nd_option.type == ND_OPT_SOURCE_LLA)) {
                    // (The MAC difference in halves: a Tofino condition
                    // reads at most 44 bits.)
                    if (meta.nd_owner_diff[47:24] != 0) {
                        meta.nd_dad = true;
                    } else if (meta.nd_owner_diff[23:0] != 0) {
                        meta.nd_dad = true;
                    } else {
                        // The owner's own probe: never answered (it would
                        // give its address up), flooded in its VNI as any
                        // unanswered solicitation.
                        meta.nd_own_dad = true;
                        meta.dst_vm = 0;
                        if (meta.flood_group == 0) {
                            meta.drop_reason = DROP_NO_FLOOD_GROUP;
                        } else {
                            meta.mcast_grp = meta.flood_group;
                        }
                    }
                }
            }
        }
    }
}

#endif  // P4VTEP_ND_SUPPRESSION_P4
