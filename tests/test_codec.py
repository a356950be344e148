import ipaddress

import pytest
from p4vtep.runtime import codec


@pytest.mark.parametrize(
    "value,width,expected",
    [
        (0, 9, b"\x00"),
        (1, 9, b"\x01"),
        (256, 9, b"\x01\x00"),
        ("00:00:0a:00:00:01", 48, b"\x0a\x00\x00\x01"),
        ("10.0.0.1", 32, b"\x0a\x00\x00\x01"),
        ("0.0.0.0", 32, b"\x00"),
        (5000, 24, b"\x13\x88"),
        (b"\x00\x00\x07", 16, b"\x07"),
    ],
)
def test_canonical_encoding(value, width, expected):
    assert codec.encode(value, width) == expected


@pytest.mark.parametrize("value,width", [(512, 9), (4096, 12), (-1, 8), (1 << 24, 24)])
def test_out_of_range_is_refused(value, width):
    with pytest.raises(codec.EncodingError, match="does not fit"):
        codec.encode(value, width)


def test_garbage_is_refused():
    with pytest.raises(codec.EncodingError):
        codec.encode("not-an-address", 32)
    with pytest.raises(codec.EncodingError):
        codec.mac_to_int("00:11:22:33:44")


def test_mac_round_trip():
    assert codec.int_to_mac(codec.mac_to_int("AA:bb:cc:00:11:22")) == "aa:bb:cc:00:11:22"


def test_canonical_strips_leading_zeros():
    assert codec.canonical(b"\x00\x00\x01\x00") == b"\x01\x00"
    assert codec.canonical(b"\x00\x00") == b"\x00"


@pytest.mark.parametrize("text", ["010.0.0.1", "1.2.3", "256.1.1.1", " 10.0.0.1", "10.0.0.1 "])
def test_malformed_dotted_quads_are_refused(text):
    # (IPv4 takes a fast path; it must refuse what ipaddress refuses)
    with pytest.raises(codec.EncodingError):
        codec.encode(text, 32)


def test_ipv6_and_numbers_in_text_still_encode():
    assert codec.encode("::1", 128) == b"\x01"
    assert codec.encode("0x10", 16) == b"\x10"


@pytest.mark.parametrize(
    "text",
    [
        "2001:db8::10",
        "2001:DB8:0:0:0:0:0:10",
        "2001:0db8:0000:0000:0000:0000:0000:0010",
        "::ffff:10.0.0.1",
        "fe80::1",
        "ff02::1:ff00:10",
        "::",
    ],
)
def test_ipv6_spellings_encode_as_ipaddress_reads_them(text):
    # (IPv6 takes inet_pton's fast path too; it must give what ipaddress gives)
    expected = int(ipaddress.ip_address(text)).to_bytes(16, "big").lstrip(b"\x00") or b"\x00"
    assert codec.encode(text, 128) == expected


@pytest.mark.parametrize("text", ["2001:db8::1::2", "2001:db8:::1", "12345::1", "2001:db8::g"])
def test_malformed_ipv6_is_refused(text):
    with pytest.raises(codec.EncodingError):
        codec.encode(text, 128)
