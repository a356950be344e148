// Underlay routing toward remote VTEPs: LPM on the VTEP IP, then one member of
// an ECMP group (P4Runtime action selector) chosen by the tenant flow hash.
#ifndef P4VTEP_UNDERLAY_P4
#define P4VTEP_UNDERLAY_P4

control Underlay(inout local_metadata_t meta)
                (bit<32> route_table_size,
                 bit<32> ecmp_member_count) {
    ECMP_SELECTOR(ecmp_selector, ecmp_member_count);

    action set_next_hop(port_t port, mac_addr_t next_hop_mac) {
        meta.egress_port = port;
        meta.next_hop_mac = next_hop_mac;
    }

    table underlay_route {
        key = {
            meta.remote_vtep : lpm @name("vtep_ip");
            meta.flow_hash   : selector;
        }
        actions = {
            set_next_hop;
        }
        implementation = ECMP_IMPLEMENTATION(ecmp_selector);
        size = route_table_size;
    }

    apply {
        if (!underlay_route.apply().hit) {
            meta.drop_reason = DROP_NO_ROUTE;
        }
    }
}

#endif  // P4VTEP_UNDERLAY_P4
