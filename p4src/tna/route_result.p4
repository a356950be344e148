// What the route lookups found (l3_forwarding.p4), and what egress needs to
// rewrite a routed frame. On Tofino the lookups run beside the MAC lookup and
// write only these fields; the decision after the MAC lookup uses them when
// the frame went to the router, and the rewrite waits for egress, so that no
// ingress step has to wait for a rewritten header (docs/tofino.md).
#ifndef P4VTEP_TNA_ROUTE_RESULT_P4
#define P4VTEP_TNA_ROUTE_RESULT_P4

const bit<2> ROUTE_NONE        = 0;
const bit<2> ROUTE_LOCAL_VM    = 1;
const bit<2> ROUTE_REMOTE_VTEP = 2;
const bit<2> ROUTE_GATEWAY     = 3;

struct route_result_t {
    bit<2>      kind;        // ROUTE_*: which action the lookups ended with
    port_t      port;        // ROUTE_LOCAL_VM: the VM's VF
    vlan_id_t   vlan_id;
    vm_index_t  vm;
    bit<1>      policed;     // ROUTE_LOCAL_VM: the VM has a receive policy
    vni_index_t vni_index;
    mac_addr_t  mac;         // the VM's MAC, or the remote VTEP's router MAC
    ipv4_addr_t vtep_ip;     // ROUTE_REMOTE_VTEP
    vni_t       l3vni;
    // ROUTE_LOCAL_VM, IPv6: how many bytes short of too big for the VM's
    // VNI the payload is (route_to_local_vm_v6; 0: too big, Packet Too Big).
    // Read in ingress only, and only after the action that writes it.
    bit<16>     payload_slack;
    bool        echo_reply;  // egress turns the echo request into the reply
    // One's complement of the checksum egress updates, and the change to
    // add to it (RFC 1624, eqn. 3: new = ~(~old + ~m + m'), which holds with
    // IPv4 options too). The deparser adds them; its checksum unit takes no
    // constants, so the change is a field.
    bit<16>     checksum_inv;
    bit<16>     checksum_change;
    bool        ipv4_checksum;   // a routed IPv4 frame: its header checksum is updated
}

#endif  // P4VTEP_TNA_ROUTE_RESULT_P4
