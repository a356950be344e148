// Port roles: which ports face servers (access) and which face spines (fabric).
#ifndef P4VTEP_PORT_CONFIG_P4
#define P4VTEP_PORT_CONFIG_P4

control PortConfig(inout local_metadata_t meta)
                  (bit<32> port_count) {
    PACKET_BYTE_COUNTER(port_rx_counter, port_count, port_t);

    // Every frame in is counted, in the actions or after the table as the
    // target prefers (arch.p4 says why).
    action set_access_port() {
        COUNT_IN_ACTION(port_rx_counter, meta.ingress_port);
        meta.port_role = PORT_ROLE_ACCESS;
    }

    action set_fabric_port() {
        COUNT_IN_ACTION(port_rx_counter, meta.ingress_port);
        meta.port_role = PORT_ROLE_FABRIC;
    }

    // The ingress control drops a packet whose port has no role (after the
    // parser-error check, which takes precedence).
    action unknown_port() {
        COUNT_IN_ACTION(port_rx_counter, meta.ingress_port);
        meta.port_role = PORT_ROLE_NONE;
    }

    table port_role {
        key = {
            meta.ingress_port : exact @name("port");
        }
        actions = {
            set_access_port;
            set_fabric_port;
            @defaultonly unknown_port;
        }
        const default_action = unknown_port();
        size = port_count;
    }

    apply {
        port_role.apply();
        COUNT_AFTER_TABLE(port_rx_counter, meta.ingress_port);
    }
}

#endif  // P4VTEP_PORT_CONFIG_P4
