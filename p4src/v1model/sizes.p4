// Table, meter and counter sizes for BMv2 (simple_switch_grpc). Every size the
// pipeline uses is set here and passed to the controls as constructor
// arguments, so another target only needs its own copy of this file.
#ifndef P4VTEP_V1MODEL_SIZES_P4
#define P4VTEP_V1MODEL_SIZES_P4

#define PORT_COUNT                 512     // bit<9> port space
#define VM_COUNT                   8192    // local VMs (VFs): bindings, meters, VM counters
#define VNI_COUNT                  16384   // VNIs present on this ToR
#define MAC_TABLE_SIZE             65536   // (VNI, MAC) bindings, local and remote
#define ARP_SUPPRESSION_TABLE_SIZE 65536   // (VNI, IP) -> MAC
#define ND_SUPPRESSION_TABLE_SIZE  65536   // (VNI, IPv6) -> MAC
#define VTEP_TERMINATION_TABLE_SIZE 64     // this switch's own VTEP addresses
#define UNDERLAY_ROUTE_TABLE_SIZE  4096    // remote VTEP routes
#define ECMP_MEMBER_COUNT          4096    // next-hop members behind up to 1K ECMP groups
#define REPLICA_TABLE_SIZE         32768   // flood replicas: local VFs + remote VTEPs
#define HOST_ROUTE_TABLE_SIZE      65536   // (VRF, IP) host routes: every VM of the ToR's VRFs
#define PREFIX_ROUTE_TABLE_SIZE    8192    // (VRF, prefix) routes: subnets, static routes
#define IPV6_HOST_ROUTE_TABLE_SIZE 65536   // (VRF, IPv6) host routes
#define IPV6_PREFIX_ROUTE_TABLE_SIZE 8192  // (VRF, IPv6 prefix) routes
// Port security (port_security.p4), per VF (port, VLAN): a guarded VM's
// addresses and allowed prefixes (fe80::/64 and :: need none), and the
// extra source MACs of allowed pairs.
#define IPV4_SOURCE_GUARD_TABLE_SIZE 32768
#define IPV6_SOURCE_GUARD_TABLE_SIZE 32768
#define ALLOWED_SOURCE_MAC_TABLE_SIZE 8192
// The CPU path (cpu_port.p4): drop reason -> punt class, one entry per reason.
#define PUNT_POLICY_TABLE_SIZE     64

#endif  // P4VTEP_V1MODEL_SIZES_P4
