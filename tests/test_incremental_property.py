"""The incremental compiler against the whole-state reference.

Random sequences of attaches, detaches, moves, QoS changes, address changes,
port security changes (on or off, DHCP server, allowed pairs of both
families with and without a MAC) and make-before-break pins (among them
VMs of two VNIs routed in one VRF, dual-stack: IPv4-only, IPv6-only and
dual-stack VMs, an IPv6 subnet beside each IPv4 one, static routes of both
families through them),
and of what EVPN taught us about external VTEPs (learned MACs, some with our
VMs' MACs or IPs of either family, and flood lists; host routes into the VRF,
some for our VMs' IPs with or without their MACs, for a static route's next
hop or a gateway's address (IPv4, IPv6 or link-local), and prefixes of both
families, some a static route's), are applied change by change; afterwards every ToR's
incrementally kept state must equal a fresh full compile of that ToR's view,
and a simulated switch fed only the recorded deltas must hold exactly that
state (each delta's "before" must be what the switch holds). No switch.

The learned facts also come the way EVPN gives them: routes learned into
and withdrawn from the learned table (MAC mobility contests with our VMs
among them), which keeps the facts it gives out up to date change by change
and tells the compiler what changed; that value must equal one rebuilt from
the whole table, and the compile from it the full compile.

Each property is two tests: the unit tier's runs a tenth of its examples
(seconds, in `make check`), the ``scale`` tier's (``..._at_scale``, in
`make test`) all of them, thousands for the first. Both are derandomized, so
each run tries the same sequences.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from fabric_fixture import ANYCAST_MAC, add_tor3, routed_fabric
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4vtep.compiler import DesiredState, Encoder, Learned, LearnedMac, compile_tor
from p4vtep.compiler.learned import LearnedHost, LearnedPrefix
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PipelineEntries
from p4vtep.evpn.routes import InclusiveMulticastRoute, IpPrefixRoute, MacIpRoute
from p4vtep.evpn.table import LearnedTable
from p4vtep.evpn.view import LocalMac
from p4vtep.model.addressing import link_local
from p4vtep.model.allocation import Allocations, external_vtep_key
from p4vtep.model.fabric import AllowedPair, Fabric, StaticRoute, Subnet, Vm, Vni, Vrf

# The first property's examples in the scale tier (the others': a share of it).
EXAMPLES = int(os.environ.get("P4VTEP_PROPERTY_EXAMPLES", "3000"))
UNIT_SHARE = 10  # the unit tier runs 1/UNIT_SHARE of a property's examples
NAMES = [f"v{i}" for i in range(8)]
ENCODER = Encoder(PipelineEntries(bmv2_pipeline().p4info))


# VNI 5000's IPv6 subnet and its gateway (5001 has another: the gateway's
# link-local address is in both, held once in the VRF); the gateway's
# link-local address (the anycast MAC's).
SUBNET6 = Subnet("2001:db8::/64", "2001:db8::fe")
LLA = link_local(ANYCAST_MAC)


def three_tor_fabric() -> Fabric:
    fabric = routed_fabric()  # VNIs 5000 and 5001 routed in VRF "red"
    # the static routes' next hops are VMs of the sequences: the default
    # routes v3's (IPv4) and v4's (IPv6), a /48 v5's (IPv6 only)
    routes = (
        StaticRoute("0.0.0.0/0", "192.168.0.3"),
        StaticRoute("::/0", "2001:db8::4"),
        StaticRoute("2001:db8:ff::/48", "2001:db8::5"),
    )
    fabric.vrfs["red"] = Vrf("red", 50000, routes)
    for vni, subnet in ((5000, SUBNET6), (5001, Subnet("fd00:a:2::/64", "fd00:a:2::1"))):
        spec = fabric.vnis[vni]
        fabric.vnis[vni] = replace(spec, subnets=(*spec.subnets, subnet))
    add_tor3(fabric)
    fabric.vnis[7000] = Vni(7000, "tenant-c", flood=False)
    return fabric


FABRIC = three_tor_fabric()
VNIS = [5000, 5001, 6000, 7000]
EXTERNAL = ["192.0.2.10", "192.0.2.20", "192.0.2.30"]
# Learned host routes of VRF "red": in its VNIs, in an L2-only one (asymmetric
# in a VNI we host would be 5000/5001 too) and in a VNI the fabric lacks
# (symmetric IRB); IPs 0-9 of either family (``address``: ours are 0-7, v3's
# to v5's the static routes' next hops), 254 (VNI 5000's gateway,
# 192.168.1.254 or 2001:db8::fe, stands in: see learned_of) and "lla" (the
# gateway's link-local address); the intake refuses the gateway's
# (gateway-ip), the table and compilers are still fed them here so that what
# they do with them stays deterministic.
HOST_VNIS = [5000, 5000, 5001, 9000]
PREFIXES = [
    "0.0.0.0/0",
    "10.0.0.0/8",
    "10.1.0.0/16",
    "192.168.0.0/24",
    "::/0",
    "2001:db8:ff::/48",
    "2001:db8:f000::/36",
]
SERVERS = sorted(FABRIC.servers)

learn = st.tuples(
    st.just("learn"),
    # What EVPN knows now: (VNI, MAC number, VTEP, IP number, IPv6) learned MACs
    # (MAC/IP numbers 0-7 are our VMs', 8-9 nobody's) and (VNI, VTEP) flood members.
    st.lists(
        st.tuples(
            st.sampled_from(VNIS),
            st.integers(0, 9),
            st.sampled_from(EXTERNAL),
            st.integers(0, 9),
            st.booleans(),
        ),
        max_size=4,
    ),
    st.lists(st.tuples(st.sampled_from(VNIS), st.sampled_from(EXTERNAL)), max_size=4),
    # (L2 VNI, MAC number, VTEP, IP number, symmetric, IPv6) host routes in
    # "red", with the L3 VNI or (asymmetric) the host's VNI, often for the IP
    # that goes with the MAC ("mac": a VM of ours that moved away, when the
    # VNI is its own); (prefix, VTEP) prefixes.
    st.lists(
        st.tuples(
            st.sampled_from(HOST_VNIS),
            st.integers(0, 9),
            st.sampled_from(EXTERNAL),
            st.sampled_from(["mac", "mac", *range(10), 254, "lla"]),
            st.booleans(),
            st.booleans(),
        ),
        max_size=4,
    ),
    st.lists(st.tuples(st.sampled_from(PREFIXES), st.sampled_from(EXTERNAL)), max_size=3),
)

op = st.one_of(
    st.tuples(
        st.just("put"),
        st.sampled_from(NAMES),
        st.sampled_from(VNIS),
        st.sampled_from(SERVERS),
        st.integers(1, 4),
        st.sampled_from([None, "gold"]),
    ),
    st.tuples(st.just("detach"), st.sampled_from(NAMES)),
    st.tuples(st.just("move"), st.sampled_from(NAMES), st.sampled_from(SERVERS), st.integers(1, 4)),
    st.tuples(st.just("qos"), st.sampled_from(NAMES), st.sampled_from([None, "gold"])),
    # A VM's addresses become IPv4 only, IPv6 only or both (``ips_of``).
    st.tuples(st.just("readdress"), st.sampled_from(NAMES), st.sampled_from(["4", "6", "46"])),
    # Port security on or off, DHCP server or not, some of PAIRS.
    st.tuples(
        st.just("secure"),
        st.sampled_from(NAMES),
        st.booleans(),
        st.booleans(),
        st.lists(st.integers(0, 5), max_size=3, unique=True),
    ),
    st.tuples(
        st.just("migrate"), st.sampled_from(NAMES), st.sampled_from(SERVERS), st.integers(1, 4)
    ),
    st.tuples(st.just("release"), st.integers(0, 7)),
    learn,
    # Supervisors take deltas often (each ToR's pending rebuilds then run)
    # or rarely (changes coalesce): both happen.
    *[st.tuples(st.just("take"), st.sampled_from(sorted(FABRIC.tors)))] * 4,
)


# Routes from two peers (both may pass on one VTEP's routes), as the intake
# admits them: type 2 in the hosted VNIs and in one the fabric lacks (9000:
# symmetric IRB only), with or without an IP of either family (ours 0-7,
# nobody's 8-9, a gateway's 254, in VNI 9000 only: a MAC+IP route bridged into a hosted VNI
# with a gateway's IP gives an ARP entry the gateway's has, and the two
# compiles disagree on which one wins; the intake refuses both (gateway-ip,
# tests/test_evpn_irb.py), so only the host route is fed here), single-label
# ("asym": a host route in a routed VNI) or with the L3 VNI ("sym"),
# mobility numbers and sticky bits for the MAC mobility contests (among them
# with our VMs' MACs: "local" tells the table our VMs); type 3 and type 5
# learned or withdrawn; a session lost. The facts are committed after some
# changes only ("commit": several coalesce), and read without a commit at
# times ("peek": what differs is then compared).
PEERS = ["198.51.100.1", "198.51.100.2"]
evpn_op = st.one_of(
    st.tuples(
        st.just("route"),
        st.sampled_from(PEERS),
        st.sampled_from([5000, 5000, 5001, 6000, 7000, 9000]),
        st.integers(0, 9),
        st.sampled_from(EXTERNAL),
        st.sampled_from([None, "mac", "mac", *range(10), 254]),
        st.sampled_from(["l2", "asym", "sym", "sym"]),
        st.integers(0, 3),
        st.integers(0, 7).map(lambda n: n == 0),  # sticky, now and then
        st.booleans(),  # IPv6
    ),
    st.tuples(st.just("withdraw"), st.integers(0, 63)),
    st.tuples(
        st.just("type3"), st.sampled_from(PEERS), st.sampled_from(VNIS), st.sampled_from(EXTERNAL)
    ),
    st.tuples(
        st.just("type5"),
        st.sampled_from(PEERS),
        st.sampled_from(PREFIXES),
        st.sampled_from(EXTERNAL),
    ),
    st.tuples(st.just("drop"), st.sampled_from(PEERS)),
    st.tuples(st.just("local")),
    *[st.tuples(st.just("commit"))] * 3,
    st.tuples(st.just("peek")),
)


# Allowed pairs of the sequences (docs/security.md): prefixes of both
# families, host and wider, one a VM's own address (v2's 192.168.0.2), with
# a VRRP MAC shared by two of them and a VM's own MAC (v1's).
PAIRS = [
    AllowedPair("10.50.0.0/16"),
    AllowedPair("192.168.0.200/32", "00:00:5e:00:01:07"),
    AllowedPair("2001:db8:ff::/48"),
    AllowedPair("2001:db8::c8/128", "00:00:5e:00:01:07"),
    AllowedPair("192.168.0.2/32", "02:00:00:00:00:01"),
    AllowedPair("10.60.0.0/24", "00:00:5e:00:02:01"),
]


def router_mac(vtep: str) -> str:
    return f"02:ee:00:00:00:{EXTERNAL.index(vtep):02x}"


def address(n: int, ipv6: bool) -> str:
    """IP number ``n`` of the sequences, of either family."""
    return f"2001:db8::{n}" if ipv6 else f"192.168.0.{n}"


def ips_of(n: int, family: str) -> tuple[str, ...]:
    """VM ``n``'s addresses: IPv4 ("4"), IPv6 ("6") or both ("46")."""
    return tuple(address(n, six) for six in (False, True) if "46"[six] in family)


def vm_named(name: str, vni: int, server: str, vlan: int, qos: str | None) -> Vm:
    """VM ``n``, as first attached: IPv4 only, dual-stack or IPv6 only
    (n % 3: v3 IPv4 only, v4 dual-stack, v5 IPv6 only, the static routes'
    next hops)."""
    n = int(name[1:])
    ips = ips_of(n, ("4", "46", "6")[n % 3])
    return Vm(name, f"02:00:00:00:00:{n:02x}", ips, vni, server, vlan, qos)


def learned_host_ip(n: int, ip: int | str, ipv6: bool) -> str:
    if ip == "lla":
        return LLA
    if ip == 254:  # (VNI 5000's gateway)
        return SUBNET6.gateway if ipv6 else "192.168.1.254"
    return address(n if ip == "mac" else int(ip), ipv6)


def learned_of(macs: list, flood: list, hosts: list = (), prefixes: list = ()) -> Learned:
    flood_map: dict[int, set[str]] = {}
    for vni, vtep in flood:
        flood_map.setdefault(vni, set()).add(vtep)
    return Learned.of(
        (
            LearnedMac(vni, f"02:00:00:00:00:{n:02x}", vtep, (address(ip, ipv6),))
            for vni, n, vtep, ip, ipv6 in macs
        ),
        flood_map,
        (
            LearnedHost(
                "red",
                learned_host_ip(n, ip, ipv6),
                vtep,
                f"02:ee:00:00:00:{EXTERNAL.index(vtep):02x}",
                50000 if symmetric else vni,
                vni,
                f"02:00:00:00:00:{n:02x}",
            )
            for vni, n, vtep, ip, symmetric, ipv6 in hosts
        ),
        (
            LearnedPrefix("red", prefix, vtep, f"02:ee:00:00:00:{EXTERNAL.index(vtep):02x}", 50000)
            for prefix, vtep in prefixes
        ),
    )


class Model:
    """Applies operations, refusing the ones validation would refuse."""

    def __init__(self) -> None:
        self.alloc = Allocations()
        self.desired = DesiredState(FABRIC, ENCODER, self.alloc)
        self.pins: list[int] = []
        self.switches = {t: {} for t in FABRIC.tors}
        self.table = LearnedTable()
        self.routes: list[tuple[str, object]] = []  # (peer, route) learned, for withdrawals
        for tor in FABRIC.tors:
            self.take(tor)  # built now: every later change goes through the deltas

    def slot_free(self, vm: Vm) -> bool:
        holders = list(self.desired.vms.values()) + self.desired.pinned_vms()
        return not any(
            o.name != vm.name and (o.server, o.vlan) == (vm.server, vm.vlan) for o in holders
        )

    def put(self, vm: Vm) -> None:
        if self.slot_free(vm):
            self.desired.change([vm], [])

    def run(self, step: tuple) -> None:
        kind, *args = step
        vms = self.desired.vms
        if kind == "put":
            self.put(vm_named(*args))
        elif kind == "detach" and args[0] in vms:
            self.desired.change([], [args[0]])
        elif kind == "move" and args[0] in vms:
            self.put(replace(vms[args[0]], server=args[1], vlan=args[2]))
        elif kind == "qos" and args[0] in vms:
            self.put(replace(vms[args[0]], qos=args[1]))
        elif kind == "readdress" and args[0] in vms:
            self.put(replace(vms[args[0]], ips=ips_of(int(args[0][1:]), args[1])))
        elif kind == "secure" and args[0] in vms:
            guarded, dhcp, pairs = args[1:]
            self.put(
                replace(
                    vms[args[0]],
                    port_security=guarded,
                    dhcp_server=dhcp,
                    allowed_pairs=tuple(PAIRS[i] for i in pairs),
                )
            )
        elif kind == "migrate" and args[0] in vms:
            old = vms[args[0]]
            moved = replace(old, server=args[1], vlan=args[2])
            if self.slot_free(moved):
                old_tor = FABRIC.servers[old.server].tor
                self.pins.append(self.desired.pin(old_tor, old.name))
                self.desired.change([moved], [])
        elif kind == "release" and self.pins:
            self.desired.unpin(self.pins.pop(args[0] % len(self.pins)))
        elif kind == "learn":
            self.desired.set_learned(learned_of(*args))
        elif kind == "take":
            self.take(args[0])
        elif kind == "reload":  # (every ToR unbuilt: rebuilt from its units when next read)
            self.desired.load(list(vms.values()))
        else:
            self.evpn(kind, args)

    def evpn(self, kind: str, args: list) -> None:
        table = self.table
        if kind == "route":
            peer, vni, n, vtep, ip, label, seq, sticky, ipv6 = args
            host: str | None = None
            if ip == 254 and vni == 9000:  # (a gateway's IP: as a host route only, see below)
                host = learned_host_ip(n, ip, ipv6)
            elif ip is not None:
                host = address(n if ip in ("mac", 254) else ip, ipv6)
            symmetric = label == "sym" and host is not None
            route = MacIpRoute(
                f"{vtep}:{vni}",
                f"02:00:00:00:00:{n:02x}",
                vni,
                vtep,
                host,
                mobility_seq=seq,
                sticky=sticky,
                l3vni=50000 if symmetric else None,
                router_mac=router_mac(vtep) if symmetric else None,
            )
            hosted = vni in FABRIC.vnis
            routed = symmetric or (label == "asym" and host is not None and vni in (5000, 5001))
            if not hosted and not symmetric:  # (refused by the intake: the old version goes)
                table.unlearn(peer, route.nlri_key())
                return
            table.learn(peer, route, "red" if routed else None, hosted)
            self.routes.append((peer, route))
        elif kind == "withdraw" and self.routes:
            peer, route = self.routes.pop(args[0] % len(self.routes))
            table.unlearn(peer, route.nlri_key())
        elif kind == "type3":
            peer, vni, vtep = args
            type3 = InclusiveMulticastRoute(f"{vtep}:{vni}", vni, vtep, vtep)
            table.learn(peer, type3)
            self.routes.append((peer, type3))
        elif kind == "type5":
            peer, prefix, vtep = args
            type5 = IpPrefixRoute(f"{vtep}:50000", prefix, 50000, vtep, router_mac=router_mac(vtep))
            table.learn(peer, type5, "red")
            self.routes.append((peer, type5))
        elif kind == "drop":
            table.drop_source(args[0])
            self.routes = [(peer, route) for peer, route in self.routes if peer != args[0]]
        elif kind == "local":
            tors = FABRIC.tors
            table.set_local(
                LocalMac(vm.vni, vm.mac, tors[FABRIC.servers[vm.server].tor].vtep_ip)
                for vm in self.desired.vms.values()
            )
        elif kind == "commit":
            self.commit()
        elif kind == "peek":
            table.view().learned()

    def commit(self) -> None:
        """The table's facts committed, as the EVPN source does; they must
        equal the facts rebuilt from the whole table."""
        learned = self.table.view().learned()
        scratch = self.table._learned_from_scratch()
        assert learned == scratch, "the learned table's facts != rebuilt from its routes"
        assert learned.taken == scratch.taken
        assert learned.vteps() == scratch.vteps()
        if learned != self.desired.learned:  # (as Controller.commit_learned)
            self.desired.set_learned(learned)

    def take(self, tor: str) -> None:
        switch = self.switches[tor]
        for key, old, new in self.desired.tors[tor].take_changes():
            assert switch.get(key) == old, "a delta's 'before' is not what the switch holds"
            if new is None:
                del switch[key]
            else:
                switch[key] = new

    def check(self) -> None:
        for tor, compiler in self.desired.tors.items():
            view = self.desired.view(tor)
            local = {n for n, vm in view.items() if FABRIC.servers[vm.server].tor == tor}
            assert set(self.alloc.vm_space(tor).keys()) == local
            learned = self.desired.learned
            reference = compile_tor(FABRIC, view.values(), tor, self.alloc, ENCODER, learned)
            assert compiler.state == reference, f"{tor}: incremental != full compile"
            self.take(tor)
            held = compiler.state
            assert self.switches[tor] == {**held.entities, **held.meters, **held.defaults}


def in_both_tiers(
    examples: int, *strategies: st.SearchStrategy[Any]
) -> Callable[[Callable[..., None]], tuple[Any, Any]]:
    """A property as (its unit test, its scale test): the same body given
    ``strategies``, with ``examples // UNIT_SHARE`` examples (at least 30),
    and with ``examples``, marked ``scale``."""

    def tests(body: Callable[..., None]) -> tuple[Any, Any]:
        def with_examples(count: int) -> Any:
            return settings(
                max_examples=count,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
                derandomize=True,
            )(given(*strategies)(body))

        unit = with_examples(max(examples // UNIT_SHARE, 30))
        return unit, pytest.mark.scale(with_examples(examples))

    return tests


def incremental_equals_full_compile(steps):
    model = Model()
    for i, step in enumerate(steps):
        model.run(step)
        if i % 8 == 7:
            model.check()
    model.check()
    # An external VTEP holds a replica id exactly while it is in a flood list.
    externals = {k for k, _ in model.alloc.tor.items() if k not in FABRIC.tors}
    assert externals == {external_vtep_key(ip) for ip in model.desired.learned.flood_vteps()}
    # Releasing every pin leaves each ToR exactly at the current desired state.
    while model.pins:
        model.desired.unpin(model.pins.pop())
    model.check()
    for tor in FABRIC.tors:
        assert model.desired.view(tor) == model.desired.vms


test_incremental_equals_full_compile, test_incremental_equals_full_compile_at_scale = in_both_tiers(
    EXAMPLES, st.lists(op, max_size=40)
)(incremental_equals_full_compile)


def a_build_in_steps_gives_the_whole_state_and_catches_changes_between_steps(
    before, between, vms_per_step
):
    """A supervisor writes a fresh switch a part at a time while the rest
    compiles (``snapshot_steps``), and changes may come between two parts:
    the parts are the whole state the build started from, and the changes
    then recorded bring that to exactly the full compile of the new view."""
    model = Model()
    for step in before:
        model.run(step)
    model.desired.load(list(model.desired.vms.values()))  # every ToR unbuilt again
    switch: dict = {}  # tor1, emptied (a new switch)
    changes = iter(between)
    for part in model.desired.tors["tor1"].snapshot_steps(vms_per_step):
        for key, data in {**part.entities, **part.meters, **part.defaults}.items():
            assert key not in switch, "an entity came in two parts"
            switch[key] = data
        step = next(changes, None)
        if step is not None and step != ("take", "tor1"):  # (its supervisor is busy writing)
            model.run(step)
    model.switches["tor1"] = switch
    model.check()


(
    test_a_build_in_steps_gives_the_whole_state_and_catches_changes_between_steps,
    test_a_build_in_steps_gives_the_whole_state_and_catches_changes_between_steps_at_scale,
) = in_both_tiers(
    max(EXAMPLES // 10, 50), st.lists(op, max_size=30), st.lists(op, max_size=20), st.integers(1, 3)
)(a_build_in_steps_gives_the_whole_state_and_catches_changes_between_steps)


# The populated-fabric properties: fewer examples (each starts from every VM
# placed), and a placement per VM name (VNI, server), most in routed VNIs.
POPULATED_EXAMPLES = max(EXAMPLES // 3, 100)
POPULATED_PLACEMENT = st.lists(
    st.tuples(st.sampled_from([5000, 5000, 5001, 6000]), st.sampled_from(SERVERS)),
    min_size=len(NAMES),
    max_size=len(NAMES),
)


def learned_routes_in_a_populated_vrf_incremental_equals_full_compile(placement, steps):
    """The same property from a populated fabric (most VMs routed in "red"),
    with learned facts changing often: learned host routes meet our VMs'
    IPs (with and without their MACs, the static route's next hop among
    them) as VMs come, go and move, VRFs come to and leave ToRs, and ToRs
    are rebuilt from their units after a bulk reload."""
    model = Model()
    for i, (name, (vni, server)) in enumerate(zip(NAMES, placement, strict=True)):
        model.put(vm_named(name, vni, server, 1 + i, None))
    model.check()
    for i, step in enumerate(steps):
        model.run(step)
        if i % 3 == 2:
            model.check()
    model.check()


(
    test_learned_routes_in_a_populated_vrf_incremental_equals_full_compile,
    test_learned_routes_in_a_populated_vrf_incremental_equals_full_compile_at_scale,
) = in_both_tiers(
    POPULATED_EXAMPLES,
    POPULATED_PLACEMENT,
    st.lists(st.one_of(learn, learn, op, st.just(("reload",))), min_size=1, max_size=25),
)(learned_routes_in_a_populated_vrf_incremental_equals_full_compile)


def test_bulk_reload_matches_the_reference_and_changes_only_what_differs():
    model = Model()
    vms = [
        vm_named(n, 5000 + 1000 * (i % 3), SERVERS[i % 5], 1 + i // 5, None)
        for i, n in enumerate(NAMES)
    ]
    for vm in vms:
        model.desired.change([vm], [])
    model.check()
    for tor in FABRIC.tors:
        model.take(tor)
    model.desired.load(vms)  # the same population again: nothing to write
    assert all(not c.take_changes() for c in model.desired.tors.values())
    moved = vms[1:] + [replace(vms[0], server="s31", vlan=4)]
    model.desired.load(moved)
    model.check()
    fresh = DesiredState(FABRIC, ENCODER, Allocations())
    fresh.load(moved)
    for tor, compiler in fresh.tors.items():
        reference = compile_tor(FABRIC, moved, tor, fresh.alloc, ENCODER)
        assert compiler.state == reference


def routes_through_the_learned_table_incremental_equals_full_compile(placement, steps):
    """Learn, withdraw and mobility sequences through the learned table,
    among VM changes: the facts it keeps up to date equal the facts rebuilt
    from all its routes, and the compile from what it says changed equals
    the full compile."""
    model = Model()
    for i, (name, (vni, server)) in enumerate(zip(NAMES, placement, strict=True)):
        model.put(vm_named(name, vni, server, 1 + i, None))
    model.evpn("local", [])
    model.commit()
    model.check()
    for i, step in enumerate(steps):
        model.run(step)
        if i % 4 == 3:
            model.commit()
            model.check()
    model.commit()
    model.check()


(
    test_routes_through_the_learned_table_incremental_equals_full_compile,
    test_routes_through_the_learned_table_incremental_equals_full_compile_at_scale,
) = in_both_tiers(
    POPULATED_EXAMPLES,
    POPULATED_PLACEMENT,
    st.lists(st.one_of(evpn_op, evpn_op, evpn_op, op, st.just(("reload",))), max_size=40),
)(routes_through_the_learned_table_incremental_equals_full_compile)
