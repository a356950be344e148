// Table, meter and counter sizes for Tofino 1 and 2: the production sizes of
// this ToR. tests/test_tofino_fit.py compiles them within the stage budget
// docs/tofino.md claims; make p4-tofino-max measures how far they go.
#ifndef P4VTEP_TNA_SIZES_P4
#define P4VTEP_TNA_SIZES_P4

#define PORT_COUNT                 512     // PortId_t space (bit<9>)
#ifndef VM_COUNT
#define VM_COUNT                   8192    // local VMs: bindings, 2 meters + 2 counters each
#endif
#ifndef VNI_COUNT
#define VNI_COUNT                  16384   // VNIs present on this ToR
#endif
// Tofino 1 with QoS (docs/tofino.md, "QoS"): 56K MACs and 32K ARP entries
// are the largest measured to fit its 12 ingress stages (64K + 32K: 13;
// 48K + 48K: no PHV allocation); Tofino 2 and BMv2 hold 64K of each.
#if __TARGET_TOFINO__ == 2
#define MAC_TABLE_DEFAULT          65536
#define ARP_SUPPRESSION_DEFAULT    65536
#else
#define MAC_TABLE_DEFAULT          57344
#define ARP_SUPPRESSION_DEFAULT    32768
#endif
#ifndef MAC_TABLE_SIZE
#define MAC_TABLE_SIZE             MAC_TABLE_DEFAULT         // (VNI, MAC) bindings, local and remote
#endif
#ifndef ARP_SUPPRESSION_TABLE_SIZE
#define ARP_SUPPRESSION_TABLE_SIZE ARP_SUPPRESSION_DEFAULT   // (VNI, IP) -> MAC
#endif
#define VTEP_TERMINATION_TABLE_SIZE 64     // this switch's own VTEP addresses
#ifndef UNDERLAY_ROUTE_TABLE_SIZE
#define UNDERLAY_ROUTE_TABLE_SIZE  4096    // remote VTEP routes (LPM)
#endif
#ifndef ECMP_MEMBER_COUNT
#define ECMP_MEMBER_COUNT          4096    // next-hop members behind up to 1K ECMP groups
#endif
#ifndef REPLICA_TABLE_SIZE
#define REPLICA_TABLE_SIZE         32768   // flood replicas: local VFs + remote VTEPs
#endif

// Routing (docs/tofino.md): production sizes on Tofino 2. Tofino 1 holds the
// largest measured to fit its 12 ingress stages beside 64K MACs and 64K ARP
// entries (24K + 4K and 16K + 6K fit; 32K + 1K and 8K + 8K take 13 stages).
#if __TARGET_TOFINO__ == 2
#define HOST_ROUTE_DEFAULT         65536
#define PREFIX_ROUTE_DEFAULT       8192
#else
#define HOST_ROUTE_DEFAULT         24576
#define PREFIX_ROUTE_DEFAULT       4096
#endif
#ifndef HOST_ROUTE_TABLE_SIZE
#define HOST_ROUTE_TABLE_SIZE      HOST_ROUTE_DEFAULT     // (VRF, IP) host routes, gateway IPs
#endif
// IPv6 (docs/tofino.md): separate tables beside the IPv4 ones, in exclusive
// branches. 128-bit keys take two SRAM words (exact) or four TCAM blocks
// per row (LPM).
#if __TARGET_TOFINO__ == 2
#define ND_SUPPRESSION_DEFAULT     16384
#define IPV6_HOST_ROUTE_DEFAULT    16384
#define IPV6_PREFIX_ROUTE_DEFAULT  2048
#else
#define ND_SUPPRESSION_DEFAULT     4096
#define IPV6_HOST_ROUTE_DEFAULT    4096
#define IPV6_PREFIX_ROUTE_DEFAULT  512
#endif
#ifndef ND_SUPPRESSION_TABLE_SIZE
#define ND_SUPPRESSION_TABLE_SIZE  ND_SUPPRESSION_DEFAULT    // (VNI, IPv6) -> MAC
#endif
#ifndef IPV6_HOST_ROUTE_TABLE_SIZE
#define IPV6_HOST_ROUTE_TABLE_SIZE IPV6_HOST_ROUTE_DEFAULT   // (VRF, IPv6) host routes
#endif
#ifndef IPV6_PREFIX_ROUTE_TABLE_SIZE
#define IPV6_PREFIX_ROUTE_TABLE_SIZE IPV6_PREFIX_ROUTE_DEFAULT  // (VRF, IPv6 prefix)
#endif
#ifndef PREFIX_ROUTE_TABLE_SIZE
#define PREFIX_ROUTE_TABLE_SIZE    PREFIX_ROUTE_DEFAULT   // (VRF, prefix) routes (LPM)
#endif

// Port security (port_security.p4): the source guards are LPM tables (TCAM:
// a 128-bit key takes four blocks per row, the IPv4 one two), looked up
// beside access_binding; the extra MACs are exact. Measured with p4c-tofino
// 9.13.4 (docs/tofino.md, "Profiles"): on Tofino 2 8K + 8K guard entries
// need 21-26 ingress stages, 4K IPv4 + 2K IPv6 take 19 of 20. BMv2 holds
// 32K, 32K and 8K. A guarded IPv6 VM takes an IPv6 entry per address and
// pair (fe80::/64 and :: are the pipeline's rule: always_allowed_v6).
// Tofino 1 (IPv4 only, no IPv6 guard): 6K IPv4 guard entries take all 24
// TCAM blocks of the binding's stage (8K: 13 ingress stages); 8K extra MACs
// take 4 SRAM blocks (as 1K do).
#if __TARGET_TOFINO__ == 2
#define IPV4_SOURCE_GUARD_DEFAULT  4096
#define IPV6_SOURCE_GUARD_DEFAULT  2048
#define ALLOWED_SOURCE_MAC_DEFAULT 2048
#else
#define IPV4_SOURCE_GUARD_DEFAULT  6144
#define IPV6_SOURCE_GUARD_DEFAULT  4096    // (unused: no IPv6 guard on Tofino 1)
#define ALLOWED_SOURCE_MAC_DEFAULT 8192
#endif
#ifndef IPV4_SOURCE_GUARD_TABLE_SIZE
#define IPV4_SOURCE_GUARD_TABLE_SIZE IPV4_SOURCE_GUARD_DEFAULT    // (port, VLAN, IPv4 prefix)
#endif
#ifndef IPV6_SOURCE_GUARD_TABLE_SIZE
#define IPV6_SOURCE_GUARD_TABLE_SIZE IPV6_SOURCE_GUARD_DEFAULT    // (port, VLAN, IPv6 prefix)
#endif
#ifndef ALLOWED_SOURCE_MAC_TABLE_SIZE
#define ALLOWED_SOURCE_MAC_TABLE_SIZE ALLOWED_SOURCE_MAC_DEFAULT  // (port, VLAN, MAC)
#endif
// The CPU path (cpu_port.p4): drop reason -> punt class, one entry per
// reason (40 reasons: a small exact table, one SRAM block).
#define PUNT_POLICY_TABLE_SIZE     64

#endif  // P4VTEP_TNA_SIZES_P4
