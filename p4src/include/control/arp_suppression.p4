// ARP suppression: a VM asking for an IP the controller knows in its VNI is
// answered by the switch, out of the port and VLAN it asked on. Nothing is
// flooded. Gratuitous ARP (sender IP == target IP) is left to flood, and so
// is an ARP probe (sender IP 0.0.0.0, RFC 5227): answered, a VM's probe for
// its own address would tell it the address is taken (the switch cannot
// tell the owner's probe from another's before the lookup; flooded, the
// owner of an address another VM probes for answers it itself).
#ifndef P4VTEP_ARP_SUPPRESSION_P4
#define P4VTEP_ARP_SUPPRESSION_P4

control ArpSuppression(inout headers_t hdr,
                       inout local_metadata_t meta)
                      (bit<32> arp_table_size) {
    DIRECT_PACKET_BYTE_COUNTER(arp_reply_counter);

    action reply(mac_addr_t target_mac) {
        hdr.ethernet.dst_addr = hdr.ethernet.src_addr;
        hdr.ethernet.src_addr = target_mac;
        hdr.arp.oper = ARP_OPER_REPLY;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.sha = target_mac;
        SWAP(ipv4_addr_t, hdr.arp.spa, hdr.arp.tpa)
        meta.egress_port = meta.ingress_port;
        meta.egress_vlan = meta.src_vlan;
        meta.dst_vm = meta.src_vm;
        meta.do_encap = false;
        meta.arp_replied = true;
        DIRECT_COUNT(arp_reply_counter);
    }

    table arp_suppression {
        key = {
            meta.vni    : exact @name("vni");
            hdr.arp.tpa : exact @name("target_ip");
        }
        actions = {
            reply;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        counters = arp_reply_counter;
        size = arp_table_size;
    }

    apply {
        if (hdr.arp.isValid() && hdr.arp.oper == ARP_OPER_REQUEST &&
            !meta.from_fabric && hdr.arp.spa != hdr.arp.tpa && hdr.arp.spa != 0) {
            arp_suppression.apply();
        }
    }
}

#endif  // P4VTEP_ARP_SUPPRESSION_P4
