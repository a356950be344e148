// Per-VNI parameters: the dense index used by counters, the traffic class and
// the flood group (head-end replication). A VRF's L3 VNI (symmetric IRB)
// has an action of its own: no flooding, and only frames to this ToR's router
// MAC are taken (l2_forwarding.p4).
#ifndef P4VTEP_VNI_LOOKUP_P4
#define P4VTEP_VNI_LOOKUP_P4

control VniLookup(inout local_metadata_t meta)
                 (bit<32> vni_table_size) {
    PACKET_BYTE_COUNTER(vni_tx_counter, vni_table_size, vni_index_t);

    action set_vni_params(vni_index_t vni_index,
                          bit<3> traffic_class,
                          mcast_group_t flood_group) {
        meta.vni_index = vni_index;
        meta.traffic_class = traffic_class;
        meta.flood_group = flood_group;
    }

#ifdef P4VTEP_ROUTING
    action set_l3vni_params(vni_index_t vni_index, bit<3> traffic_class) {
        meta.vni_index = vni_index;
        meta.traffic_class = traffic_class;
        meta.is_l3vni = true;
    }
#endif

    action unknown_vni() {
        meta.drop_reason = DROP_UNKNOWN_VNI;
    }

    table vni_config {
        key = {
            meta.vni : exact @name("vni");
        }
        actions = {
            set_vni_params;
#ifdef P4VTEP_ROUTING
            set_l3vni_params;
#endif
            @defaultonly unknown_vni;
        }
        const default_action = unknown_vni();
        size = vni_table_size;
    }

    apply {
        if (vni_config.apply().hit) {
            if (!meta.from_fabric) {
                // Sent by a local VM into the overlay.
                COUNT(vni_tx_counter, meta.vni_index);
            }
        }
    }
}

#endif  // P4VTEP_VNI_LOOKUP_P4
