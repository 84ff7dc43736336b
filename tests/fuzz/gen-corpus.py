#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz/ into tests/fuzz/corpus/<target>/.

Deterministic: running it again rewrites the same files. Each seed is a
small, valid example of what its target parses (layouts in each
tests/fuzz/fuzz_*.c header comment), so libFuzzer starts past the first
checks instead of rediscovering magic numbers.
usage: tests/fuzz/gen-corpus.py   (from anywhere)
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def write(target, name, data):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def kv(*pairs):
    return b"".join(k.encode() + b"=" + v.encode() + b"\0" for k, v in pairs)


# ---- PDUs ----
def bhs(op, flags, data=b"", ahs=b"", itt=1, rest=b""):
    h = bytearray(48)
    h[0] = op
    h[1] = flags
    h[4] = len(ahs) // 4
    h[5:8] = len(data).to_bytes(3, "big")
    h[16:20] = itt.to_bytes(4, "big")
    h[20:20 + len(rest)] = rest
    return bytes(h)


def pdu(op, flags, data=b"", ahs=b"", itt=1, rest=b"", hdig=False, ddig=False):
    h = bhs(op, flags, data, ahs, itt, rest) + ahs
    out = h
    if hdig:
        out += struct.pack("<I", crc32c(h))
    pad = (4 - len(data) % 4) % 4
    out += data + b"\0" * pad
    if ddig and data:
        out += struct.pack("<I", crc32c(data + b"\0" * pad))
    return out


LOGIN_KEYS = kv(("InitiatorName", "iqn.1994-05.com.example:init"),
                ("TargetName", "iqn.2026-11.org.rtgt:quickstart"),
                ("SessionType", "Normal"), ("AuthMethod", "None"),
                ("HeaderDigest", "None"), ("DataDigest", "None"),
                ("MaxRecvDataSegmentLength", "262144"))


def pdu_stream(hdig=False, ddig=False):
    s = b""
    # login: CSG 1 -> NSG 3 with T
    s += pdu(0x43, 0x80 | (1 << 2) | 3, LOGIN_KEYS, hdig=False, ddig=False)
    cdb = bytes([0x28, 0, 0, 0, 0, 0, 0, 0, 8, 0]) + b"\0" * 6
    rest = (4096).to_bytes(4, "big") + (1).to_bytes(4, "big") + (1).to_bytes(4, "big") + cdb
    s += pdu(0x01, 0x80 | 0x40, b"", itt=2, rest=rest, hdig=hdig, ddig=ddig)
    s += pdu(0x41, 0x80 | 0x20, b"\xaa" * 512, itt=3,
             rest=(512).to_bytes(4, "big") + (2).to_bytes(4, "big"), hdig=hdig, ddig=ddig)
    ext = struct.pack(">HB", 17, 1) + b"\0" + b"\x7f" + b"\0" * 15 + b"\0" * 3
    s += pdu(0x01, 0x80, b"", ahs=ext, itt=4, hdig=hdig, ddig=ddig)
    s += pdu(0x05, 0x80, b"\x55" * 100, itt=3, hdig=hdig, ddig=ddig)
    s += pdu(0x40, 0x80, b"ping", itt=5, hdig=hdig, ddig=ddig)
    s += pdu(0x04, 0x80, kv(("SendTargets", "All")), itt=6, hdig=hdig, ddig=ddig)
    s += pdu(0x02, 0x80 | 1, itt=7, hdig=hdig, ddig=ddig)
    s += pdu(0x10, 0x80, itt=8, hdig=hdig, ddig=ddig)
    s += pdu(0x06, 0x80, itt=9, hdig=hdig, ddig=ddig)
    return s


def gen_pdu():
    t = "fuzz_pdu"
    sit = lambda flags, dsl: bytes([flags]) + dsl.to_bytes(3, "big")
    write(t, "login-ffp", sit(0, 262144) + pdu_stream())
    write(t, "login-ffp-digests", sit(0 | 2 | 4, 8192) + pdu_stream(True, True))
    write(t, "ffp-only", sit(1, 65536) + pdu_stream()[48 + len(LOGIN_KEYS) + 0:])
    write(t, "login-continue", sit(0, 8192) +
          pdu(0x43, 0x40 | (0 << 2) | 1, kv(("InitiatorName", "iqn.1994-05.com.x:y"))) +
          pdu(0x43, 0x80 | (0 << 2) | 1, kv(("CHAP_A", "5"), ("CHAP_I", "0x1f"),
                                             ("CHAP_C", "0b3q2+7w=="))))
    write(t, "oversized", sit(1, 512) + bhs(0x01, 0xa0, b"\0" * 1024))
    write(t, "garbage", sit(1, 8192) + bytes(range(256)))


def gen_login():
    t = "fuzz_login"
    sit = lambda flags, dsl=262144: bytes([flags]) + dsl.to_bytes(3, "big")
    op = kv(("HeaderDigest", "CRC32C,None"), ("DataDigest", "None"),
            ("MaxConnections", "1"), ("InitialR2T", "No"), ("ImmediateData", "Yes"),
            ("MaxRecvDataSegmentLength", "262144"), ("MaxBurstLength", "16776192"),
            ("FirstBurstLength", "262144"), ("DefaultTime2Wait", "2"),
            ("DefaultTime2Retain", "0"), ("MaxOutstandingR2T", "1"),
            ("DataPDUInOrder", "Yes"), ("DataSequenceInOrder", "Yes"),
            ("ErrorRecoveryLevel", "0"), ("IFMarker", "No"), ("OFMarker", "No"),
            ("iSCSIProtocolLevel", "1"), ("TaskReporting", "RFC3720"),
            ("X-com.example.Key", "1"))
    write(t, "normal", sit(1 | 8) + LOGIN_KEYS + b"\xff" + op)
    write(t, "discovery", sit(1 | 2) + kv(("SessionType", "Discovery")) + b"\xff" + op)
    write(t, "second-conn", sit(8) + op)
    write(t, "ffp-text", sit(4 | 1) + kv(("MaxRecvDataSegmentLength", "65536"),
                                         ("MaxBurstLength", "1024")))
    write(t, "chap", sit(1 | 32) + kv(("AuthMethod", "CHAP,None")) + b"\xff" +
          kv(("CHAP_A", "5,7")) + b"\xff" +
          kv(("CHAP_N", "user"), ("CHAP_R", "0x" + "00" * 16)) + b"\xff" + op)
    write(t, "chap-mutual", sit(1 | 32 | 16) + kv(("CHAP_A", "5")) + b"\xff" +
          kv(("CHAP_N", "user"), ("CHAP_R", "0b" + "A" * 22 + "=="),
             ("CHAP_I", "7"), ("CHAP_C", "0x0102030405060708090a0b0c0d0e0f10")))
    write(t, "hex-and-ranges", sit(1) + kv(("MaxBurstLength", "0x1000"),
                                           ("FirstBurstLength", "0"),
                                           ("MaxOutstandingR2T", "65536"),
                                           ("DefaultTime2Wait", "99999999999999999999")))


def cdb(*b, n=16):
    b = bytes(b)
    return b + b"\0" * (n - len(b))


def scsi_seed(flags, edtl, c, data=b""):
    return bytes([flags]) + edtl.to_bytes(3, "big") + c + data


def xcopy_list():
    hdr = bytes([1, 0]) + (32).to_bytes(2, "big") + b"\0" * 4 + (28).to_bytes(4, "big") + b"\0" * 4
    cscd = bytes([0xe4, 0, 0, 0, 1, 3, 0, 16]) + bytes([0x60 | 0xa, 0x4c, 0x52] + [0] * 13) + \
        b"\0" * 4 + bytes([0, 0, 2, 0])
    seg = bytes([2, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 8]) + (0).to_bytes(8, "big") + (64).to_bytes(8, "big")
    return hdr + cscd + seg


def gen_scsi():
    t = "fuzz_scsi"
    R, W = 4, 2
    seeds = {
        "tur": scsi_seed(0, 0, cdb(0x00)),
        "inquiry": scsi_seed(R, 96, cdb(0x12, 0, 0, 0, 96)),
        "inquiry-vpd83": scsi_seed(R, 255, cdb(0x12, 1, 0x83, 0, 255)),
        "inquiry-vpd00": scsi_seed(R, 255, cdb(0x12, 1, 0x00, 0, 255)),
        "inquiry-vpdb0": scsi_seed(R, 255, cdb(0x12, 1, 0xb0, 0, 255)),
        "readcap10": scsi_seed(R, 8, cdb(0x25)),
        "readcap16": scsi_seed(R, 32, cdb(0x9e, 0x10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32)),
        "read10": scsi_seed(R, 4096, cdb(0x28, 0, 0, 0, 0, 8, 0, 0, 8)),
        "read16": scsi_seed(R, 4096, cdb(0x88, 0, 0, 0, 0, 0, 0, 0, 0, 16, 0, 0, 0, 8)),
        "write10": scsi_seed(W, 4096, cdb(0x2a, 0, 0, 0, 0, 8, 0, 0, 8), b"\x5a" * 4096),
        "write16-fua": scsi_seed(W, 512, cdb(0x8a, 0x08, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1),
                                 b"\x11" * 512),
        "writesame16": scsi_seed(W, 512, cdb(0x93, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64),
                                 b"\x22" * 512),
        "caw": scsi_seed(W, 1024, cdb(0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0),
                         b"\0" * 1024),
        "verify16": scsi_seed(W, 512, cdb(0x8f, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1),
                              b"\0" * 512),
        "sync-cache10": scsi_seed(0, 0, cdb(0x35)),
        "mode-sense6": scsi_seed(R, 255, cdb(0x1a, 0, 0x3f, 0, 255)),
        "mode-sense10": scsi_seed(R, 512, cdb(0x5a, 0, 0x08, 0, 0, 0, 0, 2, 0)),
        "mode-select6": scsi_seed(W, 24, cdb(0x15, 0x10, 0, 0, 24),
                                  bytes([0, 0, 0, 0, 0x08, 0x12, 0x04]) + b"\0" * 17),
        "report-luns": scsi_seed(R, 64, cdb(0xa0, 0, 0, 0, 0, 0, 0, 0, 0, 64)),
        "request-sense": scsi_seed(R, 18, cdb(0x03, 0, 0, 0, 18)),
        "report-opcodes": scsi_seed(R, 4096, cdb(0xa3, 0x0c, 0, 0, 0, 0, 0, 0, 0x10, 0)),
        "pr-in-keys": scsi_seed(R, 1024, cdb(0x5e, 0x00, 0, 0, 0, 0, 0, 0x04, 0)),
        "pr-out-register": scsi_seed(W, 24, cdb(0x5f, 0x00, 0, 0, 0, 0, 0, 0, 24),
                                     b"\0" * 8 + b"\x12\x34\x56\x78\x9a\xbc\xde\xf0" + b"\0" * 8),
        "unmap": scsi_seed(W, 24, cdb(0x42, 0, 0, 0, 0, 0, 0, 0, 24),
                           b"\0\x16\0\x10" + b"\0" * 4 + b"\0" * 8 + b"\0\0\0\x08" + b"\0" * 4),
        "start-stop": scsi_seed(0, 0, cdb(0x1b, 0, 0, 0, 1)),
        # data-out CDBs with R instead of W: the buffer holds poison, which
        # must neither reach the medium nor come back as data-in
        "write10-with-r": scsi_seed(R, 4096, cdb(0x2a, 0, 0, 0, 0, 8, 0, 0, 8)),
        "writesame10-with-r": scsi_seed(R, 512, cdb(0x41, 0, 0, 0, 0, 0, 0, 0, 16)),
        "caw-with-r": scsi_seed(R, 1024, cdb(0x89, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0)),
        "mode-select6-with-r": scsi_seed(R, 24, cdb(0x15, 0x10, 0, 0, 24)),
        "pr-out-register-with-r": scsi_seed(R, 24, cdb(0x5f, 0x00, 0, 0, 0, 0, 0, 0, 24)),
        "write10-edtl-cut-in-block": scsi_seed(W, 4000, cdb(0x2a, 0, 0, 0, 0, 8, 0, 0, 8),
                                               b"\x33" * 4000),
        "get-lba-status": scsi_seed(R, 32, cdb(0x9e, 0x12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 32)),
        "lun1": scsi_seed(0x20 | R, 96, cdb(0x12, 0, 0, 0, 96)),
        "varlen-32": scsi_seed(0x40 | R, 512, cdb(0x7f, 0, 0, 0, 0, 0, 0, 0x18, 0x00, 0x09,
                                                  n=32)),
        "nexus-b-read": scsi_seed(1 | R, 512, cdb(0x28, 0, 0, 0, 0, 0, 0, 0, 1)),
        # EXTENDED COPY (LID1): header, one identification CSCD (an NAA
        # designator the fuzzed LU need not have), one block-to-block
        # segment; RECEIVE COPY RESULTS and VPD 0x8F
        "xcopy": scsi_seed(W, 76, cdb(0x83, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 76), xcopy_list()),
        "xcopy-with-r": scsi_seed(R, 76, cdb(0x83, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 76)),
        "rcr-opparams": scsi_seed(R, 64, cdb(0x84, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64)),
        "rcr-status": scsi_seed(R, 64, cdb(0x84, 0x00, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64)),
        "rcr-failed-seg": scsi_seed(R, 255, cdb(0x84, 0x04, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255)),
        "inquiry-vpd8f": scsi_seed(R, 255, cdb(0x12, 1, 0x8f, 0, 255)),
    }
    for name, data in seeds.items():
        write(t, name, data)


def gen_conf():
    t = "fuzz_conf"
    ex = os.path.join(ROOT, "conf", "examples")
    for f in sorted(os.listdir(ex)):
        if f.endswith(".conf") or f.endswith(".default"):
            with open(os.path.join(ex, f), "rb") as src:
                write(t, f, src.read())
    write(t, "minimal.conf", b'pools = ( { name = "p"; level = "raid1"; chunk = "64K";\n'
          b'  members = ( "a", "b" ); } );\nportals = ( { name = "l"; listen = "127.0.0.1:4000"; } );\n'
          b'targets = ( { iqn = "iqn.2026-11.org.rtgt:x"; portals = ( "l" );\n'
          b'  luns = ( { lun = 0; pool = "p"; volume = "v"; size = "50%"; } ); allow = ( "ALL" ); } );\n')
    write(t, "size-1G", b"1G")
    write(t, "size-pct", b"80%")


def gen_sb():
    t = "fuzz_sb"
    # A 1-byte input is the template superblock itself (see fuzz_sb.c).
    write(t, "template", b"\x00")
    write(t, "template-assemble", b"\x02")
    write(t, "template-rawcrc", b"\x01")
    # The first 192 bytes of a plausible header, then one slot and one
    # volume: mutations of the layout documented at the top of raid/sb.c.
    h = bytearray(2304 + 128)
    h[0:8] = b"RTGTRAID"
    struct.pack_into("<II", h, 8, 1, 16384)
    h[16:32] = bytes(range(16))
    h[32:48] = bytes(range(16, 32))
    h[48:50] = b"fz"
    struct.pack_into("<IIIIII", h, 112, 1, 65536, 2, 0, 1, 0)
    struct.pack_into("<QQQQ", h, 136, 3, 1 << 20, 3 << 20, 131072)
    struct.pack_into("<IIQII", h, 168, 65536, 0xFFFFFFFF, 0, 2, 1)
    struct.pack_into("<I", h, 256, 1)
    h[2304:2306] = b"v0"
    struct.pack_into("<QQQ", h, 2304 + 80, 0, 1 << 20, 1 << 20)
    write(t, "crafted", b"\x00" + bytes(h))
    write(t, "crafted-assemble", b"\x02" + bytes(h))


# ---- PR OUT parameter lists and the APTPL file ----
def prout_rec(sa, who, scope_type, data, plen=None):
    """One record of fuzz_prout.c: sa | nexus << 3, the CDB's scope/type,
    the CDB's parameter list length, the data length, the data."""
    if plen is None:
        plen = len(data)
    return bytes([sa | who << 3, scope_type]) + struct.pack(">HH", plen, len(data)) + data


def prout_basic(key, sakey, flags=0):
    return struct.pack(">QQ", key, sakey) + bytes([0, 0, 0, 0, flags, 0, 0, 0])


def move_list(key, sakey, name, rel=2, aptpl=1, tlen=None):
    tid = bytearray(b"\x45\x00") + b"\0\0" + name + b"\0"
    while len(tid) % 4:
        tid += b"\0"
    struct.pack_into(">H", tid, 2, len(tid) - 4)
    head = struct.pack(">QQ", key, sakey) + bytes([0, aptpl, 0, 0])
    head += struct.pack(">HI", rel, len(tid) if tlen is None else tlen)
    return bytes(head) + bytes(tid)


def gen_prout():
    t = "fuzz_prout"
    reg_a = prout_rec(0, 0, 0, prout_basic(0, 0xA, 0x01))
    reg_b = prout_rec(0, 1, 0, prout_basic(0, 0xB, 0x01))
    reg_c = prout_rec(0, 2, 0, prout_basic(0, 0xC, 0x01))
    res_a = prout_rec(1, 0, 0x03, prout_basic(0xA, 0))
    write(t, "register-aptpl", b"\x00" + reg_a)
    write(t, "register-reserve", b"\x00" + reg_a + reg_b + reg_c + res_a)
    write(t, "release", b"\x00" + reg_a + res_a + prout_rec(2, 0, 0x03, prout_basic(0xA, 0)))
    write(t, "preempt-abort", b"\x00" + reg_a + reg_b + res_a +
          prout_rec(5, 1, 0x01, prout_basic(0xB, 0xA)))
    write(t, "clear", b"\x00" + reg_a + reg_b + prout_rec(3, 1, 0, prout_basic(0xB, 0)))
    mv = move_list(0xA, 0xB0B, b"iqn.1994-05.com.b-c.d:e:f-g.h,i,0x23456789abcd")
    write(t, "move", b"\x00" + reg_a + prout_rec(1, 0, 0x01, prout_basic(0xA, 0)) +
          prout_rec(7, 0, 0x01, mv))
    wrap = move_list(0xA, 0xB0B, b"iqn.1994-05.com.b,i,0x400000000002", tlen=0xFFFFFFF0)
    write(t, "move-wrapping-tlen", b"\x00" + reg_a + prout_rec(1, 0, 0x01, prout_basic(0xA, 0)) +
          prout_rec(7, 0, 0x01, wrap))
    state = (b'{ "format": "rtgt-pr-aptpl", "version": 2, "generation": 3, "type": 1, '
             b'"holder": 0, "registrations": [ { "key": "00000000000000aa", "rel_port": 1, '
             b'"all_tg_pt": false, "initiator_port": "iqn.1994-05.com.a,i,0x400000000001" } ] }\n')
    write(t, "file-state", b"\xff" + state)
    write(t, "file-v1", b"\xffrtgt-pr 1\ngen 1\ntype 3 0\nreg 00000000deadbeef 1 0 iqn.x,i,0x1\n")


def gen_metrics():
    t = "fuzz_metrics"
    # byte 0 even: a raw HTTP request (bit 1: /healthz unhealthy); odd: label strings
    write(t, "get", b"\x00GET /metrics HTTP/1.0\r\n\r\n")
    write(t, "get-11-query", b"\x00GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n")
    write(t, "head", b"\x00HEAD /metrics HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n\r\n")
    write(t, "healthz", b"\x00GET /healthz HTTP/1.0\r\n\r\n")
    write(t, "healthz-503", b"\x02HEAD /healthz HTTP/1.0\r\n\r\n")
    write(t, "post-body", b"\x00POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc")
    write(t, "escaped-path", b"\x00GET /%6detrics HTTP/1.0\r\n\r\n")
    write(t, "chunked", b"\x00GET /metrics HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked"
          b"\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
    write(t, "http09", b"\x00GET /metrics\r\n\r\n")
    write(t, "big-header", b"\x00GET /metrics HTTP/1.0\r\nX: " + b"a" * 4200 + b"\r\n\r\n")
    # found by fuzz_metrics: libmicrohttpd takes the method up to a NUL
    write(t, "nul-in-method", b"\x00GET\x00\x00c\x10\rm\xc4\xc0 /%6detrics HTTP/1.0\r\n\x00"
          b"GET /%6detrics HTTP/1.0\r\r\n")
    write(t, "labels", b"\x01iqn.2026-11.org.rtgt:t\x00iqn.y:\"i\\\n\x00abc\x00nic1\x00/dev/sd\nb")


if __name__ == "__main__":
    gen_pdu()
    gen_login()
    gen_scsi()
    gen_conf()
    gen_sb()
    gen_prout()
    gen_metrics()
