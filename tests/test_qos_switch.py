"""QoS on two BMv2 ToRs driven by the controller (docs/qos.md): a policy
change under traffic takes effect on the switch (the receiving VM's meter
colours and drops, its colour counters count), and every other entry of both
switches stays as compiled, with the other VMs' traffic still delivered."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path

from helpers import scrape
from p4vtep.api.counters import CounterReader
from p4vtep.model.fabric import QosPolicy, Rates
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Raw
from switch_fabric import (
    A1,
    A2,
    B1,
    background_vms,
    bmv2_fabric,
    frame,
    read_back_matches,
    send_and_receive,
    send_frames,
    start_controller,
    switch_test,
)

# About three 1 KB frames' worth of bucket at 2 KB/s: a burst of 20 mostly RED.
TIGHT = Rates(cir=2000, cburst=3000, pir=2000, pburst=3000)
B2 = replace(B1, name="b2", mac="00:00:0b:00:00:02", ips=("192.168.1.2",), server="s22", vlan=40)


def big_frame(src, dst, tag: int):
    """A frame of about 1 KB (the meter's bucket holds about three)."""
    return (
        Ether(src=src.mac, dst=dst.mac)
        / Dot1Q(vlan=src.vlan)
        / IP(src=src.ips[0], dst=dst.ips[0])
        / UDP(sport=1000 + tag, dport=80)
        / Raw(b"q" * 1000)
    )


def burst_delivered(sf, src, dst, count: int, first_tag: int) -> int:
    """Send ``count`` frames back to back from ``src``'s server; how many of
    them reached ``dst``'s server, on ``dst``'s VLAN."""
    sent = [big_frame(src, dst, first_tag + i) for i in range(count)]
    want = {
        bytes(Ether(src=src.mac, dst=dst.mac) / Dot1Q(vlan=dst.vlan) / f[Dot1Q].payload)
        for f in sent
    }
    got = send_frames(sf.host_ifaces[src.server], sent, sf.host_ifaces[dst.server])
    return len(want.intersection(got))


@switch_test()
def test_a_policy_change_under_traffic_takes_effect_and_keeps_every_other_entry(
    tmp_path: Path, capsys
) -> None:
    with bmv2_fabric(tmp_path / "logs") as sf:
        sf.fabric.policies["tight"] = QosPolicy("tight", rx=TIGHT)
        controller = start_controller(
            sf, tmp_path / "state.db", [A1, A2, B1, B2, *background_vms(32)]
        )
        try:
            assert burst_delivered(sf, A1, A2, 10, 0) == 10
            # Traffic between two other VMs the whole time (b1 -> b2, VNI 6000).
            stop = threading.Event()
            lost: list[int] = []

            def other_traffic() -> None:
                tag = 1000
                while not stop.is_set():
                    got = send_and_receive(
                        sf.host_ifaces[B1.server], frame(B1, B2, tag), sf.host_ifaces[B2.server]
                    )
                    if not any(p.haslayer("UDP") and p["UDP"].sport == 1000 + tag for p in got):
                        lost.append(tag)
                    tag += 1

            traffic = threading.Thread(target=other_traffic, daemon=True)
            traffic.start()
            try:
                controller.set_qos("a2", "tight")
                assert controller.wait_converged(30)
                time.sleep(0.5)  # (a few frames of b1's during and after)
                policed = burst_delivered(sf, A1, A2, 20, 100)
                read_back_matches(sf, controller)
                controller.set_qos("a2", None)
                assert controller.wait_converged(30)
                read_back_matches(sf, controller)
                unpoliced = burst_delivered(sf, A1, A2, 20, 200)
            finally:
                stop.set()
                traffic.join(timeout=10)
            assert 0 < policed < 20, f"{policed} of 20 frames passed a2's tight meter"
            assert unpoliced == 20, "a2's frames still policed after its policy was removed"
            assert lost == [], f"b1 -> b2 frames lost during the policy changes: {lost}"
            # The colours a2's meter gave the policed burst: every frame of it
            # coloured once (the unpoliced ones are not), RED = what it dropped.
            [row] = CounterReader(controller).collect(vms=["a2"]).vms
            assert row.colors == {}  # (no policy now: its colours are not read)
            controller.set_qos("a2", "tight")
            assert controller.wait_converged(30)
            [row] = CounterReader(controller).collect(vms=["a2"]).vms
            rx = row.colors["rx"]
            assert sum(t.packets for t in rx.values()) == 20
            assert rx["red"].packets == 20 - policed
            # BMv2 counts the packet as it entered tor2: the VXLAN packet
            # (the frame less its VF tag, plus 50 bytes of outer headers).
            assert rx["red"].bytes == rx["red"].packets * (len(big_frame(A1, A2, 0)) - 4 + 50)
            assert "tx" not in row.colors  # (tight meters what a2 receives only)
            check_api_cli_and_metrics(controller, capsys, rx)
        finally:
            controller.stop()


def check_api_cli_and_metrics(controller, capsys, rx) -> None:
    """The same colours through the API, `p4vtep counters` and Prometheus."""
    import grpc
    from p4vtep.api import overlay_pb2 as pb
    from p4vtep.api import overlay_pb2_grpc as pb_grpc
    from p4vtep.api.server import serve
    from p4vtep.cli import main as cli_main
    from p4vtep.switch.bmv2 import free_port

    address = f"127.0.0.1:{free_port()}"
    server = serve(controller, address)
    try:
        client = pb_grpc.OverlayStub(grpc.insecure_channel(address))
        [vm] = client.GetCounters(pb.GetCountersRequest(vms=["a2"])).vms
        assert vm.HasField("rx_colors")
        assert not vm.HasField("tx_colors")
        assert (vm.rx_colors.red.packets, vm.rx_colors.red.bytes) == tuple(rx["red"])
        assert vm.rx_colors.green.packets == rx["green"].packets
        capsys.readouterr()
        assert cli_main(["--api", address, "counters", "--vm", "a2"]) == 0
        out = capsys.readouterr().out.splitlines()
        header = next(i for i, line in enumerate(out) if line.startswith("VM  ") and "DIR" in line)
        cells = out[header + 2].split()
        assert cells[:3] == ["a2", "tor2", "rx"]
        assert cells[7:9] == [str(rx["red"].packets), str(rx["red"].bytes)]
    finally:
        server.stop(0)
    text = scrape(controller)
    line = (
        'p4vtep_vm_color_packets_total{color="red",direction="rx",tor="tor2",vm="a2"} '
        f"{float(rx['red'].packets)}"
    )
    assert line in text
