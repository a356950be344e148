// One hash of the tenant flow, reused for the ECMP member choice and the VXLAN
// UDP source port, so a flow keeps one path and one outer 5-tuple. The BMv2
// counterpart of tna/flow_hash.p4: the same control, another key layout.
//
// Why a key header: p4c's BMv2 backend copies every field of a hash's field
// list into a temporary of its own, and BMv2 zeroes every metadata field of
// every frame (about 600 instructions a field, bench/NOTES.md). Lists for
// IPv4, IPv6 and Ethernet took 14 such fields, paid by every frame, hashed or
// not. The one key header (ARCH_METADATA, v1model/arch.p4) holds any of the
// three, and p4c passes a header to the hash as it is. Only the hash's
// inputs differ from Tofino's: its use (a flow's path and outer source port)
// does not depend on the value.
#ifndef P4VTEP_V1MODEL_FLOW_HASH_P4
#define P4VTEP_V1MODEL_FLOW_HASH_P4

// The key filled and hashed in one straight block per kind of frame: BMv2
// runs each straight-line block of an apply as a table of its own (several
// thousand instructions a frame), so a block for the ports and another for
// the addresses would cost two more. P4 leaves a header's fields unspecified
// at setValid: each is written. BMv2 hashes only a valid header's fields, and
// counts a valid header's bytes into the packet's length, which egress reads:
// hence the validity around the hash.
#define HASH_FLOW_KEY(key_src, key_dst, key_ports, key_kind) \
    meta.flow_key.setValid(); \
    meta.flow_key.src = key_src; \
    meta.flow_key.dst = key_dst; \
    meta.flow_key.ports = key_ports; \
    meta.flow_key.kind = key_kind; \
    hash(meta.flow_hash, HashAlgorithm.crc32, (bit<16>) 0, meta.flow_key, (bit<32>) 65536); \
    meta.flow_key.setInvalid();
#define HASH_IPV4_FLOW(ports) \
    HASH_FLOW_KEY((bit<128>) hdr.ipv4.src_addr, (bit<128>) hdr.ipv4.dst_addr, ports, \
                  (bit<32>) hdr.ipv4.protocol)
#define HASH_IPV6_FLOW(ports) \
    HASH_FLOW_KEY(hdr.ipv6.src_addr, hdr.ipv6.dst_addr, ports, \
                  4w0 ++ hdr.ipv6.flow_label ++ hdr.ipv6.next_hdr)

// CRC32 of the key, truncated to 16 bits.
control FlowHash(in headers_t hdr, inout local_metadata_t meta) {
    apply {
        if (hdr.ipv4.isValid()) {
            if (hdr.tcp.isValid()) {
                HASH_IPV4_FLOW(hdr.tcp.src_port ++ hdr.tcp.dst_port)
            } else if (hdr.udp.isValid()) {
                HASH_IPV4_FLOW(hdr.udp.src_port ++ hdr.udp.dst_port)
            } else {
                HASH_IPV4_FLOW(0)
            }
        } else if (hdr.ipv6.isValid()) {
            if (hdr.tcp.isValid()) {
                HASH_IPV6_FLOW(hdr.tcp.src_port ++ hdr.tcp.dst_port)
            } else if (hdr.udp.isValid()) {
                HASH_IPV6_FLOW(hdr.udp.src_port ++ hdr.udp.dst_port)
            } else {
                HASH_IPV6_FLOW(0)
            }
        } else {
            HASH_FLOW_KEY((bit<128>) hdr.ethernet.src_addr, (bit<128>) hdr.ethernet.dst_addr,
                          0, 16w0 ++ hdr.ethernet.ether_type)
        }
    }
}

#endif  // P4VTEP_V1MODEL_FLOW_HASH_P4
