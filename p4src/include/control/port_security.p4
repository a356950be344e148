// Port security (issue 38, docs/pipeline.md): a VM sends only as itself.
// At the access ingress, after the binding named the VM and its source MAC
// passed (the VM's MAC, or one of the VF's extra MACs: allowed_source_mac),
// a VM whose binding says `guarded` is held to what the controller lists:
// - IPv4 and ARP: the source / sender address is one of the VM's (or an
//   allowed pair's prefix: ipv4_source_guard), or 0.0.0.0 (a DHCP client, an
//   ARP probe); an ARP's sender MAC is the frame's source;
// - IPv6: the source is one of the VM's (ipv6_source_guard), or link-local
//   (fe80::/64) or :: (duplicate address detection), which every guarded VM
//   may claim: the pipeline's own rule (ALWAYS_ALLOWED_V6), as 0.0.0.0 is
//   for IPv4, so the controller lists only the VM's addresses and pairs (two
//   fewer entries per VM: a third of the guard TCAM on Tofino 2, of the
//   controller's entities at 100,000 VMs); a Neighbor
//   Advertisement claims its target instead; a link-layer address option is
//   the frame's source MAC; a link-local address with a modified EUI-64
//   interface id (ff:fe in its middle) is the VM's own MAC's (so no VM
//   claims the gateway's fe80::200:5eff:fe00:101 or another VM's);
// - no Router Advertisement or Redirect; no DHCP server message (UDP 67 ->
//   68, 547 -> 546) unless the binding says `dhcp_server`.
// The first failing check is the drop reason (defines.p4, 31-35), counted
// in the ingress drop counter and per VM in port_security_drop_counter.
// A VM that is not guarded gets the MAC check only.
// What it does not see: an RA or NA behind IPv6 extension headers (the
// parser does not walk them), and an NS or NA with more than one option is
// refused rather than read.
// Without IPv6 (Tofino 1's profile: IPv4 tenants) see the end of this file.
// Two controls: PortSecurity (the tables, looked up where each target wants
// them) and PortSecurityChecks (the verdict, in AccessFiltering's branch for
// a frame whose MAC passed). PORT_SECURITY_BESIDE_BINDING (the Tofino
// program) looks every table up beside access_binding, with keys the parser
// gave, so that the checks sit in the stage of the MAC check; without it
// (BMv2, where a table apply is the unit of cost: bench/NOTES.md) the
// extra-MAC table is looked up only for a MAC that is not the VM's, and a
// source guard only for a guarded VM and its frame's family.
#ifndef P4VTEP_PORT_SECURITY_P4
#define P4VTEP_PORT_SECURITY_P4

#if defined(P4VTEP_IPV6) && !defined(P4VTEP_ROUTING)
#error "port security reads the ICMPv6 and ND headers: define P4VTEP_ROUTING with P4VTEP_IPV6"
#endif

// port_security_drop_counter: 8 cells per VM, index VM ++ class, the class
// being the drop reason - DROP_SPOOFED_IP (0 spoofed_ip .. 4 dhcp_server_from_vm).
#define PORT_SECURITY_CLASSES 8
// (v1model: the counter's index type; Tofino indexes with bit<32>)
@noWarn("unused") typedef bit<19> port_security_index_t;   // vm_index_t ++ bit<3>

// A link-local address (fe80::/64) whose interface id is a modified EUI-64
// (RFC 4291 appendix A: ff:fe in the middle, the universal/local bit of the
// MAC flipped) that is not the VM's own MAC's. Tofino: the interface id's
// difference from the VM's MAC is computed in bind_vm
// (PORT_SECURITY_BIND), and conditions read at most 44 bits, so the test is
// nested; BMv2 tests it at once, the VM's MAC being the source XOR its
// difference from the bound MAC.
#ifdef PORT_SECURITY_BESIDE_BINDING
#define PORT_SECURITY_BIND(meta, vm_mac) \
    meta.ll_iid_diff_hi = meta.claimed_ipv6[63:40] ^ vm_mac[47:24]; \
    meta.ll_iid_diff_lo = meta.claimed_ipv6[23:0] ^ vm_mac[23:0];
#define IF_FOREIGN_LINK_LOCAL(meta, hdr, stmt) \
    if (meta.claimed_ipv6[127:96] == IPV6_LINK_LOCAL[127:96]) { \
        if (meta.claimed_ipv6[95:64] == IPV6_LINK_LOCAL[95:64]) { \
            if (meta.claimed_ipv6[39:24] == 0xfffe) { \
                if (meta.ll_iid_diff_hi != 0x020000) { stmt } \
                else if (meta.ll_iid_diff_lo != 0) { stmt } \
            } \
        } \
    }
#else
#define PORT_SECURITY_BIND(meta, vm_mac)
#define IF_FOREIGN_LINK_LOCAL(meta, hdr, stmt) \
    if (meta.claimed_ipv6[127:64] == IPV6_LINK_LOCAL[127:64] && \
        meta.claimed_ipv6[39:24] == 0xfffe && \
        (meta.claimed_ipv6[63:40] ++ meta.claimed_ipv6[23:0]) != \
            (hdr.ethernet.src_addr ^ meta.src_mac_diff ^ 0x020000000000)) { stmt }
#endif

// An ARP sender MAC or an ND link-layer address option (`lla`) that is not
// the frame's source MAC, when `cond` holds. Tofino compares the XOR
// PortSecurity computed, in halves; BMv2 the two MACs.
#ifdef PORT_SECURITY_BESIDE_BINDING
#define IF_LLA_DIFFERS(cond, lla, meta, hdr, stmt) \
    if ((cond) && meta.lla_diff[47:24] != 0) { stmt } \
    else if ((cond) && meta.lla_diff[23:0] != 0) { stmt }
#else
#define IF_LLA_DIFFERS(cond, lla, meta, hdr, stmt) \
    if ((cond) && lla != hdr.ethernet.src_addr) { stmt }
#endif

// A claim every guarded VM may make (the first line above): fe80::/64 or
// ::. BMv2 tests it before the guard's lookup and skips the lookup; Tofino
// looks the guard up beside the binding and a hidden constant table beside
// it says so (always_allowed_v6: conditions read at most 44 bits there).
// The checks read V6_REFUSED: a guard miss that the rule does not cover.
#ifdef PORT_SECURITY_BESIDE_BINDING
#define V6_REFUSED(meta) (meta.source_refused && !meta.claim_always_allowed)
#else
#define ALWAYS_ALLOWED_V6(claim) \
    (claim[127:64] == IPV6_LINK_LOCAL[127:64] || claim == IPV6_UNSPECIFIED)
#define V6_REFUSED(meta) (meta.source_refused)
#endif

// The binding's flags (guard_flags: `guarded` ++ `dhcp_server`).
#define GUARDED(meta) (meta.guard_flags[1:1] == 1)
#define NO_DHCP_SERVER(meta) (meta.guard_flags[0:0] == 0)

// The drop, and its class for the per-VM counter.
#define REFUSE(meta, reason) \
    meta.drop_reason = reason; \
    meta.port_security_class = (bit<3>) (reason - DROP_SPOOFED_IP);

// The tables the controller writes (per VF: its port and VLAN).
control PortSecurity(inout headers_t hdr,
                     inout local_metadata_t meta)
                    (bit<32> source_mac_table_size,
                     bit<32> ipv4_guard_table_size,
                     bit<32> ipv6_guard_table_size) {
    // An extra source MAC the VF's VM may send from (an allowed pair's MAC,
    // e.g. a VRRP virtual MAC): the MAC check passes.
    action mac_allowed() {
        meta.mac_allowed = true;
    }

    // The claimed address is the VM's (or in one of its allowed prefixes).
    // Nothing to write: a miss says it (one primitive less per frame on BMv2).
    action source_allowed() { }

    action source_refused() {
        meta.source_refused = true;
    }

    table allowed_source_mac {
        key = {
            meta.ingress_port     : exact @name("port");
            hdr.vlan.vid          : exact @name("vlan_id");
            hdr.ethernet.src_addr : exact @name("mac");
        }
        actions = {
            mac_allowed;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = source_mac_table_size;
    }

    // A miss: not the VM's address (source_refused).
    table ipv4_source_guard {
        key = {
            meta.ingress_port : exact @name("port");
            hdr.vlan.vid      : exact @name("vlan_id");
            meta.claimed_ipv4 : lpm @name("ip");
        }
        actions = {
            source_allowed;
            @defaultonly source_refused;
        }
        const default_action = source_refused();
        size = ipv4_guard_table_size;
    }
#ifdef P4VTEP_IPV6
    table ipv6_source_guard {
        key = {
            meta.ingress_port : exact @name("port");
            hdr.vlan.vid      : exact @name("vlan_id");
            meta.claimed_ipv6 : lpm @name("ip");
        }
        actions = {
            source_allowed;
            @defaultonly source_refused;
        }
        const default_action = source_refused();
        size = ipv6_guard_table_size;
    }
#ifdef PORT_SECURITY_BESIDE_BINDING
    @hidden action claim_always_allowed() {
        meta.claim_always_allowed = true;
    }

    @hidden table always_allowed_v6 {
        key = {
            meta.claimed_ipv6 : ternary;
        }
        actions = {
            claim_always_allowed;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        const entries = {
            // fe80::/64: a link-local address; ::, duplicate address detection
            IPV6_LINK_LOCAL &&& IPV6_LINK_LOCAL_MASK : claim_always_allowed();
            IPV6_UNSPECIFIED &&& 0xffffffffffffffffffffffffffffffff : claim_always_allowed();
        }
        size = 2;
    }
#endif
#endif
    apply {
#if defined(NA_TARGET_CLAIMED_IN_CONTROL) && defined(P4VTEP_IPV6)
        // (tna/arch.p4: the parser left the NA's source there)
        if (hdr.nd.isValid() && hdr.icmp.type_code == ICMPV6_NA) {
            meta.claimed_ipv6 = hdr.nd.target;
        }
#endif
#if defined(PORT_SECURITY_BESIDE_BINDING) && !defined(P4VTEP_IPV6)
        allowed_source_mac.apply();   // (IPv4 only, Tofino 1: both beside the
        ipv4_source_guard.apply();    // binding; bind_vm XORs the ARP MACs)
#elif defined(PORT_SECURITY_BESIDE_BINDING)
        // Every lookup beside the binding; the checks read them a stage later.
        allowed_source_mac.apply();
        if (hdr.arp.isValid()) {
            meta.lla_diff = hdr.arp.sha ^ hdr.ethernet.src_addr;
        } else if (hdr.nd_option.isValid()) {
            meta.lla_diff = hdr.nd_option.addr ^ hdr.ethernet.src_addr;
        }
        if (hdr.ipv4.isValid() || hdr.arp.isValid()) {
            ipv4_source_guard.apply();
        } else if (hdr.ipv6.isValid()) {
            ipv6_source_guard.apply();
            always_allowed_v6.apply();
        }
#else
        // Only what the checks will read: applied after the binding.
        if (meta.src_mac_diff != 0) {
            allowed_source_mac.apply();
        }
#ifdef PORT_SECURITY_BOUND_IPV4
        // One condition for the two common frames, an unguarded VM's and a
        // guarded VM's from its first IPv4 address (bind_vm), which need no
        // lookup (0.0.0.0, the claim of a frame with no IPv4 source, is always
        // allowed: a VM without IPv4 has 0 there too).
        if (GUARDED(meta) && (meta.claimed_ipv4 != meta.bound_ipv4 || hdr.ipv6.isValid())) {
            if (hdr.ipv4.isValid() || hdr.arp.isValid()) {
                ipv4_source_guard.apply();
            } else if (hdr.ipv6.isValid() && !ALWAYS_ALLOWED_V6(meta.claimed_ipv6)) {
                ipv6_source_guard.apply();
            }
        }
#else
        if (GUARDED(meta) && (hdr.ipv4.isValid() || hdr.arp.isValid())) {
            ipv4_source_guard.apply();
        } else if (GUARDED(meta) && hdr.ipv6.isValid() &&
                   !ALWAYS_ALLOWED_V6(meta.claimed_ipv6)) {
            ipv6_source_guard.apply();
        }
#endif
#endif
    }
}
#ifdef P4VTEP_IPV6
// The verdict for a frame whose source MAC passed (AccessFiltering), from
// the lookups above and the binding's `guarded` and `dhcp_server`.
control PortSecurityChecks(in headers_t hdr,
                           inout local_metadata_t meta)
                          (bit<32> vm_count) {
    NARROW_COUNTER(port_security_drop_counter, vm_count * PORT_SECURITY_CLASSES,
                   port_security_index_t);

    apply {
#ifdef PORT_SECURITY_BESIDE_BINDING
        if (GUARDED(meta)) {
#else
        // BMv2: one condition for a guarded VM's ordinary frame, an allowed
        // source with nothing to inspect (the parser flagged ARP, ICMPv6 and
        // DHCP server ports); the checks below are the rest. (A guard was
        // looked up only for a guarded VM: only then is source_refused set.)
        if (meta.source_refused ||
            (GUARDED(meta) &&
             (meta.inspect ||
              (hdr.ipv6.isValid() && meta.claimed_ipv6[127:64] == IPV6_LINK_LOCAL[127:64])))) {
#endif
            if (hdr.arp.isValid()) {
                // The sender MAC is the frame's source (the MAC check held
                // that to the VM's); the sender address is the VM's, or
                // 0.0.0.0 (an ARP probe).
                IF_LLA_DIFFERS(true, hdr.arp.sha, meta, hdr, REFUSE(meta, DROP_SPOOFED_ARP))
                else if (meta.source_refused && meta.claimed_ipv4 != 0) {
                    REFUSE(meta, DROP_SPOOFED_ARP)
                }
            } else if (hdr.ipv4.isValid()) {
                // 0.0.0.0: a DHCP client before it has an address.
                if (meta.source_refused && meta.claimed_ipv4 != 0) {
                    REFUSE(meta, DROP_SPOOFED_IP)
                } else if (NO_DHCP_SERVER(meta) && hdr.udp.isValid() &&
                           hdr.udp.src_port == DHCPV4_SERVER_PORT &&
                           hdr.udp.dst_port == DHCPV4_CLIENT_PORT) {
                    REFUSE(meta, DROP_DHCP_SERVER_FROM_VM)
                }
            } else if (hdr.ipv6.isValid()) {
                if (hdr.icmp.isValid() &&
                    (hdr.icmp.type_code[15:8] == ICMPV6_TYPE_RA ||
                     hdr.icmp.type_code[15:8] == ICMPV6_TYPE_REDIRECT)) {
                    REFUSE(meta, DROP_RA_FROM_VM)
                } else if (hdr.nd.isValid()) {
                    // A solicitation or advert: the parser reads one 8-byte
                    // option at most, so one with more cannot be checked.
                    if (hdr.ipv6.payload_len != ND_LEN_NO_OPTION &&
                        hdr.ipv6.payload_len != ND_LEN_ONE_OPTION) {
                        REFUSE(meta, DROP_SPOOFED_ND)
                    }
                    else IF_LLA_DIFFERS(hdr.nd_option.isValid() &&
                                        (hdr.nd_option.type == ND_OPT_SOURCE_LLA ||
                                         hdr.nd_option.type == ND_OPT_TARGET_LLA),
                                        hdr.nd_option.addr, meta, hdr,
                                        REFUSE(meta, DROP_SPOOFED_ND))
                    else if (hdr.icmp.type_code == ICMPV6_NA) {
                        // The claim is the target (parser.p4).
                        if (V6_REFUSED(meta)) {
                            REFUSE(meta, DROP_SPOOFED_ND)
                        } else IF_FOREIGN_LINK_LOCAL(meta, hdr, REFUSE(meta, DROP_SPOOFED_ND))
                    } else if (V6_REFUSED(meta)) {
                        // A solicitation from someone else's address (:: and
                        // fe80::/64 never are: ALWAYS_ALLOWED_V6).
                        REFUSE(meta, DROP_SPOOFED_IP)
                    } else IF_FOREIGN_LINK_LOCAL(meta, hdr, REFUSE(meta, DROP_SPOOFED_IP))
                } else if (V6_REFUSED(meta)) {
                    REFUSE(meta, DROP_SPOOFED_IP)
                } else if (NO_DHCP_SERVER(meta) && hdr.udp.isValid() &&
                           hdr.udp.src_port == DHCPV6_SERVER_PORT &&
                           hdr.udp.dst_port == DHCPV6_CLIENT_PORT) {
                    REFUSE(meta, DROP_DHCP_SERVER_FROM_VM)
                } else IF_FOREIGN_LINK_LOCAL(meta, hdr, REFUSE(meta, DROP_SPOOFED_IP))
            }
            if (meta.drop_reason != DROP_NONE) {
                COUNT_VM_CELL(port_security_drop_counter, meta, meta.src_vm, meta.port_security_class, 3);
            }
        }
    }
}
#else  // !P4VTEP_IPV6

// Without IPv6 (Tofino 1's profile, tna/p4vtep.p4: IPv4 tenants). The parser
// reads no ICMPv6 or ND there and there is no ipv6_source_guard, so there is
// no RA guard, ND check or IPv6 source check: a guarded VM cannot be held to
// its IPv6 addresses, and every IPv6 frame it sends is dropped as
// spoofed_ip (docs/security.md); a VM that is not guarded is untouched. ARP,
// IPv4 and DHCPv4 are checked as above, laid out for that chip's full
// ingress (docs/tofino.md, "Port security on Tofino 1"):
// - bind_vm computes the ARP sender MAC's difference from the frame's source
//   (no table of its own beside the binding);
// - the checks are one hidden ternary table with constant entries, first
//   match wins: as a chain of conditions they took a dozen of the 16 logical
//   tables (and the 16 gateways) of the stage after the binding, which the
//   access and fabric checks already fill. It is the pipeline's logic, not
//   the controller's: the P4Info does not show it.
// tests/test_port_security_verdict.py holds its entries to the checks above.
#ifndef PORT_SECURITY_BESIDE_BINDING
#error "port security without IPv6 is laid out for Tofino: define PORT_SECURITY_BESIDE_BINDING"
#endif
#undef PORT_SECURITY_BIND
#define PORT_SECURITY_BIND(meta, vm_mac) \
    meta.lla_diff = hdr.arp.sha ^ hdr.ethernet.src_addr;

control PortSecurityChecks(in headers_t hdr,
                           inout local_metadata_t meta)
                          (bit<32> vm_count) {
    NARROW_COUNTER(port_security_drop_counter, vm_count * PORT_SECURITY_CLASSES,
                   port_security_index_t);

    @hidden action refuse(drop_reason_t reason, bit<3> class_index) {
        meta.drop_reason = reason;
        meta.port_security_class = class_index;
    }

    @hidden table port_security_verdict {
        key = {
            meta.guard_flags     : ternary;   // `guarded` ++ `dhcp_server`
            hdr.arp.isValid()    : ternary;
            hdr.ipv4.isValid()   : ternary;
            hdr.ipv6.isValid()   : ternary;
            hdr.udp.isValid()    : ternary;
            meta.source_refused  : ternary;
            meta.claimed_ipv4    : ternary;
            meta.lla_diff        : ternary;   // ARP sender MAC XOR source (bind_vm)
            hdr.udp.src_port     : ternary;
            hdr.udp.dst_port     : ternary;
        }
        actions = {
            refuse;
            NoAction;
        }
        const default_action = NoAction();
        // guarded: 0b10 &&& 0b10; guarded, no DHCP server: 0b10 &&& 0b11.
        const entries = {
            // ARP: the sender MAC is the source, and the sender address the
            // VM's or 0.0.0.0 (an ARP probe).
            (0b10 &&& 0b10, true, _, _, _, false, _, 0, _, _) : NoAction();
            (0b10 &&& 0b10, true, _, _, _, _, 0, 0, _, _) : NoAction();
            (0b10 &&& 0b10, true, _, _, _, _, _, _, _, _) :
                refuse(DROP_SPOOFED_ARP, (bit<3>) (DROP_SPOOFED_ARP - DROP_SPOOFED_IP));
            // IPv4: the source the VM's or 0.0.0.0 (a DHCP client), then no
            // DHCP server message unless the binding says dhcp_server.
            (0b10 &&& 0b11, _, true, _, true, false, _, _, DHCPV4_SERVER_PORT, DHCPV4_CLIENT_PORT) :
                refuse(DROP_DHCP_SERVER_FROM_VM,
                       (bit<3>) (DROP_DHCP_SERVER_FROM_VM - DROP_SPOOFED_IP));
            (0b10 &&& 0b11, _, true, _, true, _, 0, _, DHCPV4_SERVER_PORT, DHCPV4_CLIENT_PORT) :
                refuse(DROP_DHCP_SERVER_FROM_VM,
                       (bit<3>) (DROP_DHCP_SERVER_FROM_VM - DROP_SPOOFED_IP));
            (0b10 &&& 0b10, _, true, _, _, false, _, _, _, _) : NoAction();
            (0b10 &&& 0b10, _, true, _, _, _, 0, _, _, _) : NoAction();
            (0b10 &&& 0b10, _, true, _, _, _, _, _, _, _) :
                refuse(DROP_SPOOFED_IP, (bit<3>) (DROP_SPOOFED_IP - DROP_SPOOFED_IP));
            // IPv6: no guard here, so none of it.
            (0b10 &&& 0b10, _, _, true, _, _, _, _, _, _) :
                refuse(DROP_SPOOFED_IP, (bit<3>) (DROP_SPOOFED_IP - DROP_SPOOFED_IP));
        }
        size = 16;
    }

    apply {
        port_security_verdict.apply();
        if (meta.drop_reason != DROP_NONE) {
            COUNT_VM_CELL(port_security_drop_counter, meta, meta.src_vm, meta.port_security_class, 3);
        }
    }
}
#endif  // P4VTEP_IPV6

#undef REFUSE
#undef GUARDED
#undef NO_DHCP_SERVER
#undef IF_LLA_DIFFERS
#undef IF_FOREIGN_LINK_LOCAL
#undef V6_REFUSED
#undef ALWAYS_ALLOWED_V6

#endif  // P4VTEP_PORT_SECURITY_P4
