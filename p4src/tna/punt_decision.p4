// PuntDecision for Tofino (../include/control/cpu_port.p4 has v1model's):
// the same table, keys and actions, but the actions do the drop or the punt
// themselves. Applied for every frame ingress drops, in the stage of the drop
// counter; a decision after the table would cost Tofino 1 a stage it does
// not have (ingress 12 of 12, docs/tofino.md).
#ifndef P4VTEP_TNA_PUNT_DECISION_P4
#define P4VTEP_TNA_PUNT_DECISION_P4

control PuntDecision(inout local_metadata_t meta,
                     inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                     inout ingress_intrinsic_metadata_for_tm_t ig_tm_md)
                    (bit<32> punt_policy_size) {
    // To the CPU port; egress polices it by class (CpuPort).
    action punt(punt_class_t punt_class) {
        PUNT_CLASS(meta) = punt_class;
        ig_tm_md.ucast_egress_port = CPU_PORT;
    }

    action drop_frame() {
        ig_dprsr_md.drop_ctl = 1;
    }

    table punt_policy {
        key = {
            meta.drop_reason : exact @name("drop_reason");
        }
        actions = {
            punt;
            @defaultonly drop_frame;
        }
        const default_action = drop_frame();
        size = punt_policy_size;
    }

    apply {
        punt_policy.apply();
    }
}

#endif  // P4VTEP_TNA_PUNT_DECISION_P4
