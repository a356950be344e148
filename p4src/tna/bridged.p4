// What ingress decided and egress needs, carried in front of the packet from
// the ingress deparser to the egress parser. @flexible lets the compiler pack
// the fields (and pick their order) to save PHV and bytes on the wire.
#ifndef P4VTEP_TNA_BRIDGED_P4
#define P4VTEP_TNA_BRIDGED_P4

// The CPU path's punt class (PUNT_CLASS_*, cpu_port.p4) rides in a byte of
// its own, in front of bridged_t: it is written where the punt is decided
// (an l2 trap, punt_policy), several stages before the copy at the end of
// ingress that fills bridged_t. Inside the @flexible header the compiler
// packed it beside fields that copy writes, and on Tofino 2 that action then
// had three sources for one container (docs/tofino.md, "Profiles"). A frame
// at the CPU port without a class is a packet-out answered back to where it
// came from (an echo it routed to a gateway), so egress needs no from_cpu.
#ifdef P4VTEP_CPU_PATH
header bridged_punt_t {
    punt_class_t punt_class;
}
#define BRIDGED_BYTES(meta) (sizeInBytes(meta.bridged_punt) + sizeInBytes(meta.bridged))
#else
#define BRIDGED_BYTES(meta) sizeInBytes(meta.bridged)
#endif

@flexible
header bridged_t {
    bit<1>      is_packet_out;
    bit<1>      from_fabric;
    bit<1>      do_encap;
    port_t      ingress_port;
    vlan_id_t   src_vlan;
    vlan_id_t   egress_vlan;
    vni_t       vni;
    vni_index_t vni_index;
    vm_index_t  dst_vm;
    ipv4_addr_t remote_vtep;
    mac_addr_t  next_hop_mac;
    bit<16>     flow_hash;
    bit<2>      tx_color;
#ifndef RX_POLICING_IN_INGRESS
    // Tofino 1: the unicast RX meter runs in egress. A byte of its own: as a
    // bit it joined the container of the flags above, whose copy then had
    // one source too many for one action.
    bit<8>      rx_policed;
#endif
    // Routing: egress rewrites (tna/l3_forwarding.p4, RoutedRewrite)
    bit<1>      routed;
    bit<1>      echo_reply;
    mac_addr_t  route_mac;     // the routed frame's destination MAC, or the
                               // ND target's MAC of an advert (never routed)
    mac_addr_t  gateway_mac;   // its source MAC (the anycast gateway)
    // ND suppression's answer (NdAdvert): what the table gave
#ifdef P4VTEP_IPV6
    bit<1>      nd_advert;
    bit<1>      nd_dad;
    bit<1>      nd_router;
#endif
}

#endif  // P4VTEP_TNA_BRIDGED_P4
