"""Domain and node XML for libvirt's test driver (the real libvirt API, no
daemon), with the p4vtep metadata a VM binding carries."""

from __future__ import annotations

NODE = (
    "<node><cpu><nodes>1</nodes><sockets>1</sockets><cores>2</cores><threads>1</threads>"
    "</cpu><memory>8388608</memory></node>"
)


def domain(
    name: str, mac: str, vlan: int, vni: int = 5000, ips=("192.168.1.10",), meta: str | None = None
) -> str:
    ip_xml = "".join(f"<p4vtep:ip>{ip}</p4vtep:ip>" for ip in ips)
    meta = meta if meta is not None else f"<p4vtep:vni>{vni}</p4vtep:vni>{ip_xml}"
    return f"""<domain type='test'>
  <name>{name}</name>
  <memory>1048576</memory>
  <os><type>hvm</type></os>
  <metadata><p4vtep:vm xmlns:p4vtep="https://p4vtep.dev/xmlns/vm/1">{meta}</p4vtep:vm></metadata>
  <devices>
    <interface type='hostdev' managed='yes'>
      <mac address='{mac}'/>
      <source><address type='pci' domain='0x0000' bus='0x03' slot='0x10' function='0x1'/></source>
      <vlan><tag id='{vlan}'/></vlan>
    </interface>
  </devices>
</domain>"""
