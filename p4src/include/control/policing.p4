// Per-VM two-rate three-colour meters (RFC 2698), one array per direction.
// RED is dropped. YELLOW loses its traffic class (best-effort queue) and, when
// tunnelled, gets DSCP CS1 on the outer header. Receive-side policing is the
// one a server cannot do itself: its NIC has already taken the packet.
#ifndef P4VTEP_POLICING_P4
#define P4VTEP_POLICING_P4

// Ingress: what a local VM transmits.
control TxPolicing(inout local_metadata_t meta)
                  (bit<32> vm_count) {
    BYTE_METER(vm_tx_meter, vm_count, vm_index_t);

    apply {
        EXECUTE_METER(vm_tx_meter, meta.src_vm, meta.tx_color);
        if (meta.tx_color == METER_RED) {
            meta.drop_reason = DROP_METER_RED_TX;
        } else if (meta.tx_color == METER_YELLOW) {
            meta.traffic_class = TC_BEST_EFFORT;
        }
    }
}

// Egress: what is delivered to a local VM (unicast and every flood replica).
control RxPolicing(inout local_metadata_t meta)
                  (bit<32> vm_count, bit<32> vni_count) {
    BYTE_METER(vm_rx_meter, vm_count, vm_index_t);
    PACKET_BYTE_COUNTER(vm_rx_counter, vm_count, vm_index_t);
    PACKET_BYTE_COUNTER(vni_rx_counter, vni_count, vni_index_t);

    apply {
        EXECUTE_METER(vm_rx_meter, meta.dst_vm, meta.rx_color);
        if (meta.rx_color == METER_RED) {
            meta.drop_reason = DROP_METER_RED_RX;
        } else {
            COUNT(vm_rx_counter, meta.dst_vm);
            COUNT(vni_rx_counter, meta.vni_index);
        }
    }
}

#endif  // P4VTEP_POLICING_P4
