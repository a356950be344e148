// One hash of the tenant flow, reused for the ECMP member choice and the VXLAN
// UDP source port, so a flow keeps one path and one outer 5-tuple. Tofino's
// hash unit reads the fields where they are; v1model/flow_hash.p4 is the BMv2
// counterpart (same control, same result's use, another key layout).
#ifndef P4VTEP_TNA_FLOW_HASH_P4
#define P4VTEP_TNA_FLOW_HASH_P4

control FlowHash(in headers_t hdr, inout local_metadata_t meta) {
    FLOW_HASHER(ipv4_hasher)
    FLOW_HASHER(ipv6_hasher)
    FLOW_HASHER(l2_hasher)

    apply {
        if (hdr.tcp.isValid()) {
            meta.l4_src_port = hdr.tcp.src_port;
            meta.l4_dst_port = hdr.tcp.dst_port;
        } else if (hdr.udp.isValid()) {
            meta.l4_src_port = hdr.udp.src_port;
            meta.l4_dst_port = hdr.udp.dst_port;
        }
        if (hdr.ipv4.isValid()) {
            FLOW_HASH(ipv4_hasher, meta.flow_hash,
                      hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                      meta.l4_src_port, meta.l4_dst_port);
        } else if (hdr.ipv6.isValid()) {
            FLOW_HASH(ipv6_hasher, meta.flow_hash,
                      hdr.ipv6.src_addr, hdr.ipv6.dst_addr, hdr.ipv6.next_hdr,
                      hdr.ipv6.flow_label, meta.l4_src_port, meta.l4_dst_port);
        } else {
            FLOW_HASH(l2_hasher, meta.flow_hash,
                      hdr.ethernet.src_addr, hdr.ethernet.dst_addr, hdr.ethernet.ether_type);
        }
    }
}

#endif  // P4VTEP_TNA_FLOW_HASH_P4
