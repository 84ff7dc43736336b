#!/usr/bin/env python3
"""Raw TCP rate over one link: 'serve HOST PORT' (sink/source, one client at a
time) or 'run HOST PORT SECONDS send|recv' (prints MB/s, 10^6 bytes)."""
import socket, sys, time

BUF = 1 << 20

def serve(host, port):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(4)
    data = b'\0' * BUF
    while True:
        c, _ = ls.accept()
        mode = c.recv(1)
        try:
            if mode == b's':            # client sends: we sink
                while c.recv_into(bytearray(BUF)):
                    pass
            else:                       # client receives: we source
                while True:
                    c.sendall(data)
        except OSError:
            pass
        c.close()

def run(host, port, secs, mode):
    c = socket.create_connection((host, port))
    c.sendall(b's' if mode == 'send' else b'r')
    data = b'\0' * BUF
    buf = bytearray(BUF)
    n = 0
    t0 = time.monotonic()
    end = t0 + secs
    while time.monotonic() < end:
        if mode == 'send':
            c.sendall(data)
            n += BUF
        else:
            r = c.recv_into(buf)
            if not r:
                break
            n += r
    el = time.monotonic() - t0
    c.close()
    print('%.1f' % (n / el / 1e6))

if __name__ == '__main__':
    if sys.argv[1] == 'serve':
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        run(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5])
