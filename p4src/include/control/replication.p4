// Head-end replication. The controller programs, per VNI, a multicast group of
// (port, replica id) pairs: one per local VF and one per remote VTEP hosting
// the VNI. The replica id tells egress what each copy is for. BUM from the
// fabric takes the same group: its copies toward remote VTEPs are dropped
// here (split horizon), the one place that knows a copy's kind.
#ifndef P4VTEP_REPLICATION_P4
#define P4VTEP_REPLICATION_P4

control Replication(inout local_metadata_t meta,
                    in port_t egress_port,
                    in bit<16> replica_id)
                   (bit<32> replica_table_size) {
    // `policed`: the VM has a receive policy (the copy passes vm_rx_flood_meter).
    action replicate_to_vm(vlan_id_t vlan_id, vm_index_t vm, bit<1> policed) {
        meta.egress_vlan = vlan_id;
        meta.dst_vm = vm;
        meta.do_encap = false;
        meta.flood_policed = policed;
    }

    // The uplink for each VTEP replica is chosen by the controller when it
    // builds the group: egress cannot change the port of a copy.
    action replicate_to_vtep(ipv4_addr_t vtep_ip, mac_addr_t next_hop_mac) {
        meta.remote_vtep = vtep_ip;
        meta.next_hop_mac = next_hop_mac;
        meta.do_encap = true;
    }

    action unknown_replica() {
        meta.drop_reason = DROP_NO_FLOOD_GROUP;
    }

    table flood_replica {
        key = {
            replica_id : exact @name("replica_id");
        }
        actions = {
            replicate_to_vm;
            replicate_to_vtep;
            @defaultonly unknown_replica;
        }
        const default_action = unknown_replica();
        size = replica_table_size;
    }

    apply {
        flood_replica.apply();
        if (meta.drop_reason == DROP_NONE) {
            if (meta.do_encap) {
                if (meta.from_fabric) {
                    meta.drop_reason = DROP_SPLIT_HORIZON;
                }
            } else if (!meta.from_fabric && egress_port == meta.ingress_port &&
                       meta.egress_vlan == meta.src_vlan) {
                meta.drop_reason = DROP_SPLIT_HORIZON;
            }
        }
    }
}

#endif  // P4VTEP_REPLICATION_P4
