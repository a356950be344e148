#!/usr/bin/env python3
"""The p4vtep demo: a leaf-spine fabric in Mininet, the controller, and the
checks a network engineer would run. Exits 0 only if every check holds.

    sudo .venv/bin/python topologies/demo.py          # run the checks
    sudo .venv/bin/python topologies/demo.py --cli    # then leave the Mininet CLI open
    sudo .venv/bin/python topologies/demo.py --evpn   # with an FRR host peering by BGP EVPN
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from ipaddress import ip_address, ip_network
from pathlib import Path

import grpc
import yaml
from frr_host import FrrDaemons, FrrHostPlan, frr_missing
from p4vtep.api import overlay_pb2 as pb
from p4vtep.api import overlay_pb2_grpc as pb_grpc
from p4vtep.dataplane.artifacts import bmv2_pipeline
from p4vtep.dataplane.entries import PORT_TX_COUNTER, PipelineEntries, RemoteVtepHop
from p4vtep.model.addressing import link_local
from p4vtep.processes import stop_process
from p4vtep.runtime import entities
from p4vtep.runtime.client import P4RuntimeError, SwitchConnection
from p4vtep.runtime.protos import p4runtime_pb2
from p4vtep.switch.bmv2 import find_simple_switch_grpc

# The package is installed in the venv; this directory is on the path as the
# script's own, or through pytest.ini when the tests import the demo.
HERE = Path(__file__).resolve().parent
REPO = HERE.parent

API = "127.0.0.1:50061"
MIGRATING_VM, MIGRATION_TARGET, MIGRATION_VLAN = "a3", "s12", 15
POLICED_VM, POLICED_PEER = "a2", "a4"  # a2 has the 5 Mbit/s "bronze" policy
UNPOLICED_VM, UNPOLICED_PEER = "a1", "a3"
POLICED_RATE_MBPS = 5.0
# Enough flows that the hash rarely leaves an uplink almost idle: with 8,
# one uplink got a single flow in about 7 % of runs (and 9.9 % of the
# packets in one), with 16 a split of 2:14 or worse is 0.4 %.
ECMP_FLOWS = 16
# traceroute across the fabric: a1 (tor1, tenant A's first subnet) to a5
# (tor2, its second subnet), both families.
TRACEROUTE_SRC, TRACEROUTE_DST = "a1", "a5"
# In no subnet and no route of tenant A's VRF (TEST-NET-2, the IPv6
# documentation prefix's unused /48): the ToR answers "no route".
UNROUTED = ("198.51.100.1", "2001:db8:99::1")


@dataclass
class Check:
    name: str
    ok: bool
    detail: str


# The main job never skips silently: without BMv2 it fails and says how to get it.
TOOLCHAIN_HELP = """\
BMv2's simple_switch_grpc is missing: the demo's switches are BMv2 (p4c is not
needed: the demo runs the committed pipeline, and recompiles it only when p4c is
there). Ways to provide it:
  1. put simple_switch_grpc on PATH, or name it: SIMPLE_SWITCH_GRPC=...
  2. an archive packed on another machine: P4VTEP_TOOLCHAIN_ARCHIVE=<path or URL> make demo
  3. upstream's package p4lang-bmv2 (Ubuntu 20.04+, Debian 11): make demo
     adds upstream's signed repository and installs it
Upstream's install pages (packages, Docker images, building from source):
  https://github.com/p4lang/behavioral-model#installing-bmv2
See docs/toolchain.md."""


def missing_requirements(evpn: bool = False) -> list[str]:
    missing = []
    if evpn:
        missing += frr_missing()
        if shutil.which("gobgpd") is None:
            missing.append("gobgpd (Debian package gobgpd)")
    if os.geteuid() != 0:
        missing.append("root")
    if find_simple_switch_grpc() is None:
        missing.append("simple_switch_grpc")
    for tool in ("mnexec", "iperf3", "ethtool", "ping", "traceroute"):
        if shutil.which(tool) is None:
            missing.append(tool)
    try:
        import mininet  # noqa: F401
    except ImportError:
        missing.append("mininet (Python)")
    return missing


class Demo:
    """Starts the fabric and the controller; each method is one check."""

    def __init__(self, log_dir: Path, evpn: bool = False) -> None:
        self.log_dir = log_dir
        self.layout = None
        self.controller = None
        self.state_dir = Path(tempfile.mkdtemp(prefix="p4vtep-demo-"))
        # `make demo EVPN=1`: an FRR host (frr_host.py) peering with the controller.
        self.frr_plan = FrrHostPlan() if evpn else None
        self.frr: FrrDaemons | None = None
        self.pipeline = bmv2_pipeline()
        self.entries = PipelineEntries(self.pipeline.p4info)

    # --- lifecycle ----------------------------------------------------------------
    def __enter__(self) -> Demo:
        import leaf_spine

        self.leaf_spine = leaf_spine
        self.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            self.layout = leaf_spine.build(
                log_dir=str(self.log_dir), run_dir=self.state_dir, frr=self.frr_plan
            )
            self.layout.net.start()
            leaf_spine.configure(self.layout)
            fabric_file = leaf_spine.FABRIC_FILE
            if self.frr_plan is not None:
                self.frr = FrrDaemons(
                    self.frr_plan, self.frr_plan.tenant(self.layout.fabric), self.log_dir
                )
                self.frr.start()
                fabric_file = self.state_dir / "fabric-evpn.yaml"
                fabric_file.write_text(
                    leaf_spine.FABRIC_FILE.read_text()
                    + "# make demo EVPN=1: the FRR host frr1 (topologies/frr_host.py)\n"
                    + yaml.safe_dump(self.frr_plan.evpn_section(), sort_keys=False)
                )
            with open(self.log_dir / "controller.log", "w") as out:
                self.controller = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "p4vtep.cli",
                        "controller",
                        "run",
                        "--fabric",
                        str(fabric_file),
                        "--inventory",
                        str(leaf_spine.INVENTORY_FILE),
                        "--state",
                        str(self.state_dir / "state.db"),
                        "--listen",
                        API,
                    ],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env={**os.environ, "PYTHONPATH": str(REPO / "control_plane")},
                )
            self.api = pb_grpc.OverlayStub(grpc.insecure_channel(API))
            self.wait_converged()
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        if self.controller is not None:
            stop_process(self.controller, timeout=10)
        if self.frr is not None:
            self.frr.stop()
        if self.frr_plan is not None:
            self.leaf_spine.remove_frr_host_link(self.frr_plan)
        if self.layout is not None:
            self.leaf_spine.stop_nics(self.layout)
            self.layout.net.stop()
        shutil.rmtree(self.state_dir, ignore_errors=True)

    def wait_converged(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                switches = self.api.ListSwitches(pb.ListSwitchesRequest(), timeout=2).switches
                if switches and all(
                    s.connected and s.primary and s.reconciles and not s.last_error
                    for s in switches
                ):
                    return
            except grpc.RpcError:
                pass
            if self.controller.poll() is not None:
                raise RuntimeError(f"controller exited; see {self.log_dir}/controller.log")
            time.sleep(0.3)
        raise TimeoutError("the controller did not converge")

    # --- helpers --------------------------------------------------------------------
    def host(self, name: str):
        return self.layout.vm(name)

    def switch_read(self, tor: str, *queries):
        spec = self.layout.fabric.tors[tor]
        with SwitchConnection(spec.address, spec.device_id, election_id=0) as conn:
            return conn.read(*queries)

    def port_tx(self, tor: str, port: int) -> int:
        [entity] = self.switch_read(tor, self.entries.counter(PORT_TX_COUNTER, port))
        return entity.counter_entry.data.packet_count

    def replies(self, table: str) -> int:
        """What a suppression table (arp_suppression, nd_suppression) answered
        on both ToRs: the sum of its direct counter."""
        query = entities.direct_counter_entry(entities.table_entry(self.pipeline.p4info, table))
        return sum(
            e.direct_counter_entry.data.packet_count
            for tor in self.layout.fabric.tors
            for e in self.switch_read(tor, query)
        )

    def arp_replies(self) -> int:
        return self.replies("arp_suppression")

    def reached(self, src: str, dst: str) -> bool:
        """src pings dst's IP and the answer comes from dst's MAC (same subnet)
        or, routed, through the anycast gateway with the TTL the ToRs lowered."""
        vm, target = self.layout.vms[src], self.layout.vms[dst]
        host = self.host(src)
        host.cmd(f"ip neigh flush to {target.ips[0]}")
        out = host.cmd(f"ping -c 1 -W 1 {target.ips[0]}")
        if " 0% packet loss" not in out:
            return False
        if self.routed_pair(src, dst):
            # The reply was routed by dst's ToR and, across the fabric, by
            # src's ToR too (symmetric IRB): its TTL 64 less one per ToR.
            fabric = self.layout.fabric
            hops = 1 if fabric.tor_of(vm) == fabric.tor_of(target) else 2
            gateway = host.cmd("ip route show default").split()[2]
            neigh = host.cmd(f"ip neigh show to {gateway}")
            return fabric.anycast_gateway_mac in neigh and f"ttl={64 - hops}" in out
        neigh = host.cmd(f"ip neigh show to {target.ips[0]}")
        return target.mac in neigh and vm.ips[0] != target.ips[0]

    def routed_pair(self, src: str, dst: str) -> bool:
        """Two VMs in different VNIs of one VRF: routed by the ToRs."""
        vnis = self.layout.fabric.vnis
        a, b = self.layout.vms[src].vni, self.layout.vms[dst].vni
        return a != b and vnis[a].vrf is not None and vnis[a].vrf == vnis[b].vrf

    def iperf_mbps(
        self, client: str, server: str, seconds: int = 3, parallel: int = 1, omit: int = 0
    ) -> float:
        """TCP goodput from ``client`` to ``server``; ``omit``: seconds left out
        at the start (slow start, and a policer's full bucket)."""
        srv = self.host(server)
        srv.cmd("iperf3 -s -1 -D --logfile /dev/null")
        time.sleep(0.5)
        out = self.host(client).cmd(
            f"iperf3 -c {self.layout.vms[server].ips[0]} -t {seconds} -O {omit} -P {parallel} -J"
        )
        try:
            result = json.loads(out[out.index("{") :])
            return result["end"]["sum_received"]["bits_per_second"] / 1e6
        except (ValueError, KeyError):
            return 0.0

    # --- checks ---------------------------------------------------------------------------
    def check_ping_matrix(self) -> Check:
        names = sorted(self.layout.vms)
        wrong = []
        cross_ok = same_ok = same = cross = 0
        for src in names:
            for dst in names:
                if src == dst:
                    continue
                # the same tenant: the same VNI, or VNIs of one VRF (routed)
                same_vni = self.layout.vms[src].vni == self.layout.vms[dst].vni
                same_tenant = same_vni or self.routed_pair(src, dst)
                got = self.reached(src, dst)
                same += same_tenant
                cross += not same_tenant
                same_ok += same_tenant and got
                cross_ok += (not same_tenant) and got
                if got != same_tenant:
                    wrong.append(f"{src}->{dst}")
        return Check(
            "ping matrix",
            not wrong,
            f"same tenant {same_ok}/{same} reached, other tenant {cross_ok}/{cross}"
            + (f"; wrong: {', '.join(wrong)}" if wrong else ""),
        )

    def check_routing(self) -> Check:
        """Tenant A's subnets route to each other across the ToRs and on one
        ToR: ping replies come back through the anycast gateway, one TTL less
        per ToR that routed them."""
        vms, fabric = self.layout.vms, self.layout.fabric
        pairs = [(s, d) for s in sorted(vms) for d in sorted(vms) if self.routed_pair(s, d)]
        across = [(s, d) for s, d in pairs if fabric.tor_of(vms[s]) != fabric.tor_of(vms[d])]
        ok = [(s, d) for s, d in pairs if self.reached(s, d)]
        ok_across = [p for p in ok if p in across]
        failed = [f"{s}->{d}" for s, d in pairs if (s, d) not in ok]
        return Check(
            "routing",
            bool(pairs) and not failed and bool(across),
            f"{len(ok)}/{len(pairs)} routed pairs reached ({len(ok_across)}/{len(across)} "
            "across ToRs, over the L3 VNI)" + (f"; failed: {', '.join(failed)}" if failed else ""),
        )

    def check_arp_suppression(self, before: int) -> Check:
        replies = self.arp_replies() - before
        return Check("ARP suppression", replies > 0, f"{replies} ARP requests answered by the ToRs")

    def ipv6_of(self, name: str) -> str:
        return next(ip for ip in self.layout.vms[name].ips if ":" in ip)

    @property
    def gateway_lla(self) -> str:
        """The gateway's IPv6 link-local address: the modified EUI-64 of the
        anycast MAC (fe80::200:5eff:fe00:101), the VMs' default router."""
        return link_local(self.layout.fabric.anycast_gateway_mac)

    def gateway_of(self, name: str, ip: str) -> str:
        """The gateway address of the subnet that holds ``ip``, one of the
        VM's addresses: what the ToRs answer ICMP errors to it from."""
        vni = self.layout.fabric.vnis[self.layout.vms[name].vni]
        return next(s.gateway for s in vni.subnets if ip_address(ip) in ip_network(s.prefix))

    def slaac_vms(self) -> list[str]:
        """The VMs that form their IPv6 address from the ToRs' router
        advertisements (a SLAAC subnet: leaf_spine.slaac_addresses)."""
        vms = self.layout.vms
        return [n for n in sorted(vms) if self.leaf_spine.slaac_addresses(self.layout, vms[n])]

    def missing_ipv6(self, names: list[str]) -> dict[str, list[str]]:
        """Per VM of ``names``: the IPv6 addresses of its ``ips`` it does not
        hold yet, or holds tentative (in DAD)."""
        missing = {}
        for name in names:
            held = set()
            for line in self.host(name).cmd("ip -6 -o addr show scope global").splitlines():
                fields = line.split()
                if "inet6" in fields and "tentative" not in fields:
                    held.add(ip_address(fields[fields.index("inet6") + 1].split("/")[0]))
            want = [ip for ip in self.layout.vms[name].ips if ":" in ip]
            if gone := [ip for ip in want if ip_address(ip) not in held]:
                missing[name] = gone
        return missing

    def wait_ipv6(self, names: list[str], timeout: float) -> dict[str, list[str]]:
        """Waits until the VMs hold their IPv6 addresses out of DAD (a SLAAC
        VM's appear once it has heard a router advertisement); what is still
        missing at the deadline."""
        deadline = time.monotonic() + timeout
        while (missing := self.missing_ipv6(names)) and time.monotonic() < deadline:
            time.sleep(0.2)
        return missing

    def ping6(self, src: str, dst_ip: str) -> str:
        host = self.host(src)
        host.cmd(f"ip -6 neigh flush to {dst_ip}")
        return host.cmd(f"ping -6 -c 1 -W 1 {dst_ip}")

    def check_ipv6(self, timeout: float = 30.0) -> Check:
        """Tenant A is dual-stack: its VMs' neighbour solicitations are
        answered by the ToRs (for a VM behind the other ToR, and for the
        gateway's link-local address, the VMs' default router), and ping6 is
        routed across the ToRs (hop limit 64 less one per ToR)."""
        vms = self.layout.vms
        dual = sorted(n for n in vms if any(":" in ip for ip in vms[n].ips))
        # DAD first: the ToRs never answer a VM's probe for its own address,
        # so every address leaves the tentative state (and the SLAAC VMs'
        # have been formed from the ToRs' router advertisements).
        if missing := self.wait_ipv6(dual, timeout):
            return Check("IPv6", False, f"addresses missing or tentative (DAD): {missing}")
        before = self.replies("nd_suppression")
        # a1 (tor1) and a3 (tor2): one subnet, bridged; the NS a3 answers to
        # is answered by tor1 instead, with a3's MAC.
        bridged = " 0% packet loss" in self.ping6("a1", self.ipv6_of("a3"))
        neigh = self.host("a1").cmd(f"ip -6 neigh show to {self.ipv6_of('a3')}")
        bridged = bridged and vms["a3"].mac in neigh
        # routed: a1 (tor1) -> a5 (tor2), a6 (tor1) -> a4 (tor2), and back
        pairs = [("a1", "a5"), ("a5", "a1"), ("a6", "a4"), ("a4", "a6")]
        routed = [(s, d) for s, d in pairs if "ttl=62" in self.ping6(s, self.ipv6_of(d))]
        # the default router, learnt from the ToR's advert: R flag, anycast MAC
        gateway = self.host("a1").cmd(f"ip -6 neigh show to {self.gateway_lla}")
        router = "router" in gateway and self.layout.fabric.anycast_gateway_mac in gateway
        answered = self.replies("nd_suppression") - before
        ok = bridged and len(routed) == len(pairs) and answered > 0 and router
        return Check(
            "IPv6",
            ok,
            f"{answered} solicitations answered by the ToRs; ping6 a1->a3 bridged across "
            f"ToRs: {'ok' if bridged else 'FAILED'}; routed ping6 across ToRs "
            f"{len(routed)}/{len(pairs)} (hop limit 62)"
            + f"; gateway {self.gateway_lla}: "
            + ("router, anycast MAC" if router else f"WRONG: {gateway.strip()}"),
        )

    def check_slaac(self, timeout: float = 30.0) -> Check:
        """The SLAAC VMs (a5, a6: 2001:db8:2::/64 is advertised with the A
        flag) configure IPv6 from the ToRs' router advertisements alone (the
        demo sets neither their IPv6 address nor their default route): each
        holds its EUI-64 address with a lifetime (``dynamic``: formed from a
        prefix option), and a default route learnt from an advert (``proto
        ra``) via the gateway's link-local address; then each pings a VM of
        the other subnet behind the other ToR (routed by both: hop limit 62)."""
        names = self.slaac_vms()
        if not names:
            return Check("SLAAC", False, "no VM forms its address with SLAAC")
        missing = self.wait_ipv6(names, timeout)
        formed, routed, wrong = [], [], []
        for name in names:
            host = self.host(name)
            for ip in self.leaf_spine.slaac_addresses(self.layout, self.layout.vms[name]):
                if "dynamic" in host.cmd(f"ip -6 -o addr show to {ip}"):
                    formed.append(ip)
                else:
                    wrong.append(f"{name}: {ip} not formed from an advert")
            # The default route comes with an advert: wait for it as well.
            deadline = time.monotonic() + timeout
            while True:
                default = host.cmd("ip -6 route show default")
                if (f"via {self.gateway_lla}" in default and "proto ra" in default) or (
                    time.monotonic() > deadline
                ):
                    break
                time.sleep(0.2)
            if f"via {self.gateway_lla}" not in default or "proto ra" not in default:
                wrong.append(f"{name}: default route {default.strip() or 'none'}")
            # a VM of the other subnet behind the other ToR
            vms, fabric = self.layout.vms, self.layout.fabric
            peer = next(
                n
                for n in sorted(vms)
                if self.routed_pair(name, n)
                and n not in names
                and fabric.tor_of(vms[n]) != fabric.tor_of(vms[name])
                and any(":" in ip for ip in vms[n].ips)
            )
            if self._routed_ping(host, self.ipv6_of(peer)):
                routed.append(f"{name}->{peer}")
            else:
                wrong.append(f"{name}->{peer}: no reply with hop limit 62")
        prefixes = sorted(
            {
                s.prefix
                for n in names
                for s in self.layout.fabric.vnis[self.layout.vms[n].vni].subnets
                if s.slaac
            }
        )
        ok = not missing and not wrong and len(routed) == len(names)
        return Check(
            "SLAAC",
            ok,
            f"{'/'.join(names)} formed {', '.join(formed) or 'nothing'} from the ToRs' adverts "
            f"({', '.join(prefixes)}), default router {self.gateway_lla}; routed ping6 "
            f"{', '.join(routed) or 'none'} across ToRs (hop limit 62)"
            + (f"; missing: {missing}" if missing else "")
            + (f"; {'; '.join(wrong)}" if wrong else ""),
        )

    def traceroute(self, src: str, dst_ip: str) -> list[str]:
        """The hops ``traceroute`` (UDP probes, one a hop) lists from ``src``
        to ``dst_ip``: an address, or * for a hop that did not answer."""
        family = "-6 " if ":" in dst_ip else ""
        out = self.host(src).cmd(f"traceroute {family}-n -q 1 -w 2 -m 5 {dst_ip}")
        hops = []
        for line in out.splitlines():
            fields = line.split()
            if len(fields) >= 2 and fields[0].isdigit():
                hop = fields[1]
                hops.append(hop if hop == "*" else str(ip_address(hop)))
        return hops

    def check_traceroute(self, tries: int = 3) -> Check:
        """traceroute from a1 (tor1) to a5 (tor2, the other subnet) over IPv4
        and IPv6: every ToR that routes the probe (symmetric IRB: both)
        answers the one that expires there with ICMP time exceeded from the
        gateway address of the sender's subnet (the controller, through the
        CPU path; tor2's answer routed back over the L3 VNI), so the
        gateway is listed twice, then the target."""
        src, dst = TRACEROUTE_SRC, TRACEROUTE_DST
        vms, fabric = self.layout.vms, self.layout.fabric
        tors = f"{fabric.tor_of(vms[src]).name} -> {fabric.tor_of(vms[dst]).name}"
        parts, ok = [], True
        for family, pick in (("IPv4", lambda ips: ips[0]), ("IPv6", self._ipv6_in)):
            target = pick(vms[dst].ips)
            gateway = self.gateway_of(src, pick(vms[src].ips))
            want = [str(ip_address(gateway))] * 2 + [str(ip_address(target))]
            for _ in range(tries):  # (a probe may be lost, as to any traceroute)
                hops = self.traceroute(src, target)
                if hops == want:
                    break
            ok = ok and hops == want
            parts.append(f"{family} {', '.join(hops) or 'nothing'}")
        return Check(
            "traceroute",
            ok,
            f"{src} -> {dst} ({tors}) listed: "
            + "; ".join(parts)
            + " (the gateway once per routing ToR, then the target)",
        )

    @staticmethod
    def _ipv6_in(ips: list[str]) -> str:
        return next(ip for ip in ips if ":" in ip)

    def check_unreachable(self, tries: int = 3) -> Check:
        """A ping to a prefix tenant A's VRF has no route for is answered by
        the ToR (through the CPU path) with destination unreachable, no
        route, from the gateway of the sender's subnet: ping prints
        "Destination Net Unreachable" (IPv4 3/0) and "Destination
        unreachable: No route" (IPv6 1/0)."""
        src = TRACEROUTE_SRC
        ips = self.layout.vms[src].ips
        parts, ok = [], True
        for family, target, own, text in (
            ("IPv4", UNROUTED[0], ips[0], "Destination Net Unreachable"),
            ("IPv6", UNROUTED[1], self._ipv6_in(ips), "Destination unreachable: No route"),
        ):
            want = f"From {self.gateway_of(src, own)} icmp_seq=1 {text}"
            for _ in range(tries):
                out = self.host(src).cmd(f"ping -c 1 -W 1 {target}")
                if want in out:
                    break
            got = want in out
            ok = ok and got
            parts.append(f'{family} {target}: "{want}"' if got else f"{family} {target}: no answer")
        return Check("unreachable", ok, f"{src} pings: " + "; ".join(parts))

    def check_ecmp(self) -> Check:
        before = {p: self.port_tx("tor1", p) for p in (3, 4)}
        mbps = self.iperf_mbps(UNPOLICED_VM, UNPOLICED_PEER, seconds=2, parallel=ECMP_FLOWS)
        used = {p: self.port_tx("tor1", p) - before[p] for p in (3, 4)}
        total = sum(used.values())
        ok = total > 0 and min(used.values()) > 0.1 * total
        return Check(
            "ECMP",
            ok,
            f"tor1 uplinks: port 3 {used[3]} pkts, port 4 {used[4]} pkts "
            f"({ECMP_FLOWS} TCP flows, {mbps:.1f} Mbit/s)",
        )

    def check_migration(self) -> Check:
        src = self.host("a1")
        target_ip = self.layout.vms[MIGRATING_VM].ips[0]
        ping = src.popen(
            ["ping", "-i", "0.02", "-w", "8", target_ip],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        time.sleep(2)
        started = time.monotonic()
        reply = self.api.MigrateVM(
            pb.MigrateVMRequest(name=MIGRATING_VM, server=MIGRATION_TARGET, vlan=MIGRATION_VLAN),
            timeout=60,
        )
        self.leaf_spine.move_vm(self.layout, MIGRATING_VM, MIGRATION_TARGET, MIGRATION_VLAN)
        took = time.monotonic() - started
        out, _ = ping.communicate(timeout=30)
        match = re.search(r"(\d+) packets transmitted, (\d+) received", out)
        sent, received = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
        lost = sent - received
        after = self.reached("a4", MIGRATING_VM) and self.reached("a1", MIGRATING_VM)
        ok = reply.applied and received > 0 and after and lost < sent // 2
        return Check(
            "live migration",
            ok,
            f"{MIGRATING_VM} s21/tor2 -> {MIGRATION_TARGET}/tor1 in {took:.2f} s; ping "
            f"every 20 ms: {lost} of {sent} lost; reachable after: {after}",
        )

    def check_qos(self) -> Check:
        """TCP through the policer gets what it is promised (>= 0.9 of the rate,
        with the default buckets: control_plane/p4vtep/model/qos_bursts.py) and no
        more (<= 1.05: the bucket's start is left out)."""
        policed = self.iperf_mbps(POLICED_VM, POLICED_PEER, seconds=8, omit=2)
        free = self.iperf_mbps(UNPOLICED_VM, UNPOLICED_PEER)
        ok = 0.9 * POLICED_RATE_MBPS <= policed <= POLICED_RATE_MBPS * 1.05 and free >= 2 * policed
        return Check(
            "QoS",
            ok,
            f"{POLICED_VM} policed at {POLICED_RATE_MBPS:.0f} Mbit/s: "
            f"{policed:.2f} Mbit/s; {UNPOLICED_VM} unpoliced: {free:.2f} Mbit/s",
        )

    # --- EVPN checks (--evpn): the FRR host and the p4vtep ToRs ------------------
    def evpn_peer(self) -> pb.EvpnPeer | None:
        peers = self.api.EvpnPeers(pb.EvpnPeersRequest(), timeout=5).peers
        return next((p for p in peers if p.address == self.frr_plan.mgmt_frr_ip), None)

    def check_evpn_session(self, timeout: float = 60.0) -> Check:
        """The controller's speaker and frr1's bgpd: session up, routes both ways.

        Only the controller dials, and gobgpd dials every 5-10 s whatever its
        connect-retry says (5 s is its floor): 6-10 s after frr1's bgpd
        starts. (When bgpd could not see the VRF's namespace, frr1 turned
        away about half the dials and one CI run took 68 s: frr_vrf.py,
        ``daemon_command``.)"""
        try:
            return self._check_evpn_session(timeout)
        except grpc.RpcError as exc:
            return Check("EVPN session", False, f"{exc.code().name}: {exc.details()}")

    def _check_evpn_session(self, timeout: float) -> Check:
        deadline = time.monotonic() + timeout
        peer = self.evpn_peer()
        while time.monotonic() < deadline and not (
            peer is not None
            and peer.state == "ESTABLISHED"
            and peer.routes_accepted
            and peer.routes_advertised
        ):
            time.sleep(0.5)
            peer = self.evpn_peer()
        if peer is None:
            return Check("EVPN session", False, "the controller lists no session to frr1")
        return Check(
            "EVPN session",
            peer.state == "ESTABLISHED" and peer.routes_accepted > 0 and peer.routes_advertised > 0,
            f"frr1 ({peer.address}, AS {peer.asn}) {peer.state}; routes received "
            f"{peer.routes_received}, accepted {peer.routes_accepted}, "
            f"advertised {peer.routes_advertised}",
        )

    def frr_vm_reaches(self, ip: str, mac: str) -> bool:
        """c1 (behind frr1) pings ``ip`` and the answer comes from ``mac``."""
        c1 = self.layout.net.get(self.frr_plan.vm_name)
        c1.cmd(f"ip neigh flush to {ip}")
        if " 0% packet loss" not in c1.cmd(f"ping -c 1 -W 1 {ip}"):
            return False
        return mac in c1.cmd(f"ip neigh show to {ip}")

    def reaches_frr_vm(self, src: str) -> bool:
        plan = self.frr_plan
        host = self.host(src)
        host.cmd(f"ip neigh flush to {plan.vm_ip}")
        if " 0% packet loss" not in host.cmd(f"ping -c 1 -W 1 {plan.vm_ip}"):
            return False
        return plan.vm_mac in host.cmd(f"ip neigh show to {plan.vm_ip}")

    def check_evpn_reach(self) -> Check:
        """c1 and tenant A's VMs on both ToRs reach each other (no static
        knowledge on either side); tenant B is never reached."""
        vms = self.layout.vms
        tenant = [n for n in sorted(vms) if vms[n].vni == self.frr_plan.vni]
        other = [n for n in sorted(vms) if vms[n].vni != self.frr_plan.vni]
        ok_out = [n for n in tenant if self.frr_vm_reaches(vms[n].ips[0], vms[n].mac)]
        ok_in = [n for n in tenant if self.reaches_frr_vm(n)]
        # Tenant B shares the subnet: an IP both tenants use answers with
        # tenant A's MAC; B-only IPs do not answer at all.
        leaked = [n for n in other if self.frr_vm_reaches(vms[n].ips[0], vms[n].mac)]
        leaked += [n for n in other if self.reaches_frr_vm(n)]
        tors = sorted({self.layout.fabric.servers[vms[n].server].tor for n in ok_out})
        return Check(
            "EVPN reach",
            len(ok_out) == len(ok_in) == len(tenant) and not leaked,
            f"c1 (frr1) -> tenant A {len(ok_out)}/{len(tenant)} (on {', '.join(tors)}), "
            f"tenant A -> c1 {len(ok_in)}/{len(tenant)}, tenant B reached {len(leaked)}",
        )

    def check_evpn_routes(self, timeout: float = 10.0) -> Check:
        """Each side holds the other's routes: c1's MAC is installed on the
        p4vtep side; FRR has every tenant A MAC behind the right ToR VTEP,
        and so does frr1's kernel FDB."""
        plan = self.frr_plan
        # c1 speaks once, so frr1's bridge knows its MAC and FRR advertises it.
        self.layout.net.get(plan.vm_name).cmd(f"ping -c 1 -W 1 {self.layout.vms['a1'].ips[0]}")
        deadline = time.monotonic() + timeout
        while True:
            try:
                check = self._evpn_routes()
            except grpc.RpcError as exc:
                return Check("EVPN routes", False, f"{exc.code().name}: {exc.details()}")
            if check.ok or time.monotonic() > deadline:
                return check
            time.sleep(0.5)

    def _evpn_routes(self) -> Check:
        plan = self.frr_plan
        ours = self.api.EvpnRoutes(pb.EvpnRoutesRequest(vni=plan.vni), timeout=5).routes
        c1_installed = any(
            r.type == 2 and r.mac == plan.vm_mac and r.vtep == plan.vtep_ip and r.installed
            for r in ours
        )
        want = {
            vm.mac: self.layout.fabric.tors[self.layout.fabric.servers[vm.server].tor].vtep_ip
            for vm in self.layout.vms.values()
            if vm.vni == plan.vni
        }
        paths = self.frr.evpn_paths()
        in_bgp = {
            mac
            for mac, vtep in want.items()
            if any(
                f"[{mac}]" in p["prefix"]
                and any(n.get("ip") == vtep for n in p.get("nexthops", []))
                for p in paths
            )
        }
        fdb = json.loads(
            self.layout.net.get(plan.name).cmd(f"bridge -j fdb show dev vxlan{plan.vni}") or "[]"
        )
        in_fdb = {
            m
            for m, vtep in want.items()
            if any(e.get("mac") == m and e.get("dst") == vtep for e in fdb)
        }
        return Check(
            "EVPN routes",
            c1_installed and in_bgp == set(want) and in_fdb == set(want),
            f"c1's MAC installed on the p4vtep side: {c1_installed}; tenant A MACs "
            f"in FRR's BGP table {len(in_bgp)}/{len(want)}, "
            f"in frr1's FDB {len(in_fdb)}/{len(want)}",
        )

    def check_evpn_routing(self, timeout: float = 20.0) -> Check:
        """Symmetric IRB across the EVPN boundary: tenant A's VMs of the other
        subnet (on both ToRs) and c2 (behind frr1's VRF) ping each other,
        each through its own gateway (the ToR's anycast gateway, FRR's SVI),
        every reply routed by both VTEPs over the L3 VNI (TTL 62). Before
        the pings, each side holds the other's routes: c2's host route on
        every ToR towards frr1's VTEP and router MAC in the L3 VNI (read
        from the switches), and frr1's VRF a route to each of those VMs via
        its ToR's VTEP, with that ToR's router MAC on the L3 SVI."""
        plan, fabric = self.frr_plan, self.layout.fabric
        tenant = plan.tenant(fabric)
        c2 = self.layout.net.get(plan.routed_vm_name)
        gateway = tenant.svis[0].address.split("/")[0]
        # c2 speaks: frr1's SVI learns its ARP entry and FRR advertises its
        # MAC+IP (zebra takes neighbours from notifications only).
        c2.cmd(f"ping -c 1 -W 1 {gateway}")
        vms = self.layout.vms
        others = [
            n
            for n in sorted(vms)
            if vms[n].vni != plan.routed_vni and fabric.vnis[vms[n].vni].vrf == tenant.vrf
        ]
        deadline = time.monotonic() + timeout
        while True:
            on_tors = self._routed_host_on_tors(tenant.l3vni)
            tors = {n: fabric.tor_of(vms[n]) for n in others}
            routes, neighbours = tenant.bgp_routes(), tenant.neighbours()
            in_frr = [
                n
                for n in others
                if routes.get(vms[n].ips[0]) == {tors[n].vtep_ip}
                and neighbours.get(tors[n].vtep_ip) == tors[n].router_mac
            ]
            if (all(on_tors.values()) and len(in_frr) == len(others)) or (
                time.monotonic() > deadline
            ):
                break
            time.sleep(0.5)
        out_ok = [n for n in others if self._routed_ping(self.host(n), plan.routed_vm_ip)]
        in_ok = [n for n in others if self._routed_ping(c2, vms[n].ips[0])]
        c2_gateway = c2.cmd(f"ip neigh show to {gateway}")
        ok = (
            bool(others)
            and all(on_tors.values())
            and len(in_frr) == len(out_ok) == len(in_ok) == len(others)
            and fabric.anycast_gateway_mac in c2_gateway
        )
        holding = ", ".join(t for t, held in sorted(on_tors.items()) if held) or "none"
        return Check(
            "EVPN routing",
            ok,
            f"{'/'.join(others)} -> {plan.routed_vm_name} ({plan.routed_vm_ip}, frr1's VRF) "
            f"{len(out_ok)}/{len(others)}, back {len(in_ok)}/{len(others)}, TTL 62 both ways "
            f"(L3 VNI {tenant.l3vni}); {plan.routed_vm_name}'s host route on {holding} via "
            f"{plan.vtep_ip}, rmac {plan.router_mac}; frr1's VRF routes {len(in_frr)}/"
            f"{len(others)} via their ToR",
        )

    def _routed_host_on_tors(self, l3vni: int, ip: str | None = None) -> dict[str, bool]:
        """Per ToR: does its ``host_route`` table (``ipv6_host_route`` for an
        IPv6 ``ip``) send the FRR host's routed VM (its IPv4 address unless
        ``ip`` says) to frr1's VTEP and router MAC in the L3 VNI (read from
        the switch)?"""
        plan = self.frr_plan
        want = self.entries.host_route(
            l3vni, ip or plan.routed_vm_ip, RemoteVtepHop(plan.vtep_ip, plan.router_mac, l3vni)
        )
        query = p4runtime_pb2.TableEntry()
        query.CopyFrom(want)
        query.ClearField("action")
        held = {}
        for tor in self.layout.fabric.tors:
            try:
                got = self.switch_read(tor, query)
            except P4RuntimeError:  # (no such entry: BMv2 answers NOT_FOUND)
                got = []
            held[tor] = any(e.table_entry.action == want.action for e in got)
        return held

    @staticmethod
    def _routed_ping(host, ip: str, tries: int = 3) -> bool:
        """``host`` pings ``ip`` in another subnet: answered with TTL 62 (the
        reply routed by both VTEPs; for IPv6 the hop limit, which ping prints
        as ttl), its gateway resolved (the first try may be lost to ARP or
        ND on the way)."""
        family = "-6 " if ":" in ip else ""
        for _ in range(tries):
            out = host.cmd(f"ping {family}-c 1 -W 1 {ip}")
            if " 0% packet loss" in out:
                return "ttl=62" in out
        return False

    def check_evpn_ipv6_routing(self, timeout: float = 20.0) -> Check:
        """Symmetric IRB over IPv6 across the EVPN boundary: every dual-stack
        VM of tenant A (both subnets, both ToRs) and c2 (2001:db8:3::21, a
        subnet of FRR's own on its SVI) ping each other, each through its
        own gateway (the ToRs' anycast gateway, FRR's SVI), every reply
        routed by both VTEPs over the L3 VNI (hop limit 62). Before the
        pings, each side holds the other's routes: c2's ``ipv6_host_route``
        on every ToR towards frr1's VTEP and router MAC in the L3 VNI (read
        from the switches), and frr1's VRF a route to each VM's IPv6 address
        via ``::ffff:<its ToR's VTEP>`` (how FRR writes an IPv4 VTEP as the
        next hop of an IPv6 route), that ToR's router MAC on the L3 SVI as
        the neighbour entry of that next hop. c2 does not forward IPv6 (a
        router-flagged host's route would be dropped by GoBGP: docs/evpn.md)."""
        plan, fabric = self.frr_plan, self.layout.fabric
        tenant = plan.tenant(fabric)
        c2 = self.layout.net.get(plan.routed_vm_name)
        gateway6 = plan.routed_gateway6
        # c2 speaks IPv6: frr1's SVI learns its neighbour entry and FRR
        # advertises its MAC+IPv6 (zebra takes neighbours from notifications only).
        c2.cmd(f"ping -6 -c 1 -W 1 {gateway6}")
        forwarding = c2.cmd("sysctl -n net.ipv6.conf.all.forwarding").strip()
        vms = self.layout.vms
        dual = [
            n
            for n in sorted(vms)
            if fabric.vnis[vms[n].vni].vrf == tenant.vrf and any(":" in ip for ip in vms[n].ips)
        ]
        self.wait_ipv6(dual, timeout)  # (a SLAAC VM's address comes with an advert)
        deadline = time.monotonic() + timeout
        while True:
            on_tors = self._routed_host_on_tors(tenant.l3vni, plan.routed_vm_ip6)
            tors = {n: fabric.tor_of(vms[n]) for n in dual}
            routes, neighbours = tenant.bgp_routes("-6"), tenant.neighbours()
            in_frr = [
                n
                for n in dual
                if routes.get(self.ipv6_of(n)) == {f"::ffff:{tors[n].vtep_ip}"}
                and neighbours.get(f"::ffff:{tors[n].vtep_ip}") == tors[n].router_mac
            ]
            if (all(on_tors.values()) and len(in_frr) == len(dual)) or (
                time.monotonic() > deadline
            ):
                break
            time.sleep(0.5)
        out_ok = [n for n in dual if self._routed_ping(self.host(n), plan.routed_vm_ip6)]
        in_ok = [n for n in dual if self._routed_ping(c2, self.ipv6_of(n))]
        c2_gateway = c2.cmd(f"ip -6 neigh show to {gateway6}")
        ok = (
            bool(dual)
            and forwarding == "0"
            and all(on_tors.values())
            and len(in_frr) == len(out_ok) == len(in_ok) == len(dual)
            and fabric.anycast_gateway_mac in c2_gateway
        )
        holding = ", ".join(t for t, held in sorted(on_tors.items()) if held) or "none"
        return Check(
            "EVPN IPv6 routing",
            ok,
            f"{'/'.join(dual)} -> {plan.routed_vm_name} ({plan.routed_vm_ip6}, frr1's VRF) "
            f"{len(out_ok)}/{len(dual)}, back {len(in_ok)}/{len(dual)}, hop limit 62 both ways; "
            f"{plan.routed_vm_name}'s ipv6_host_route on {holding} via {plan.vtep_ip}, "
            f"rmac {plan.router_mac}; "
            f"frr1's VRF IPv6 routes {len(in_frr)}/{len(dual)} via ::ffff:<their ToR>"
            + ("" if forwarding == "0" else f"; {plan.routed_vm_name} forwards IPv6"),
        )

    def run_checks(self) -> list[Check]:
        arp_before = self.arp_replies()
        checks = [self.check_ping_matrix()]
        checks.append(self.check_routing())
        checks.append(self.check_arp_suppression(arp_before))
        checks.append(self.check_ipv6())
        checks.append(self.check_slaac())
        checks.append(self.check_traceroute())
        checks.append(self.check_unreachable())
        if self.frr_plan is not None:
            # Before the migration moves a3: the FDB check knows each VM's ToR.
            checks.append(self.check_evpn_session())
            checks.append(self.check_evpn_reach())
            checks.append(self.check_evpn_routes())
            checks.append(self.check_evpn_routing())
            checks.append(self.check_evpn_ipv6_routing())
        checks.append(self.check_ecmp())
        checks.append(self.check_qos())
        checks.append(self.check_migration())
        return checks


def summary(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f"{'CHECK'.ljust(width)}  RESULT  DETAIL", f"{'-' * width}  ------  ------"]
    lines += [f"{c.name.ljust(width)}  {'PASS' if c.ok else 'FAIL':6}  {c.detail}" for c in checks]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description="p4vtep Mininet demo")
    parser.add_argument("--cli", action="store_true", help="open the Mininet CLI after the checks")
    parser.add_argument(
        "--evpn",
        action="store_true",
        help="add an FRR host (Linux VTEP) that peers with the controller by BGP EVPN",
    )
    parser.add_argument("--log-dir", default=str(REPO / "logs" / "demo"))
    args = parser.parse_args()
    missing = missing_requirements(evpn=args.evpn)
    if missing:
        print(f"demo not run: missing {', '.join(missing)} (see README.md)")
        if "simple_switch_grpc" in missing:
            print(TOOLCHAIN_HELP)
        return 1
    started = time.monotonic()
    with Demo(Path(args.log_dir), evpn=args.evpn) as demo:
        print(f"fabric up and converged in {time.monotonic() - started:.1f} s", flush=True)
        checks = demo.run_checks()
        print(summary(checks))
        print(f"demo finished in {time.monotonic() - started:.1f} s")
        if args.cli:
            from mininet.cli import CLI

            CLI(demo.layout.net)
    return 0 if all(c.ok for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
