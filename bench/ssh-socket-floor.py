#!/usr/bin/env python3
"""The ssh -L hop to a loopback TCP port against the same hop to a Unix socket (docs/performance.md, finding 25).

Starts a throwaway sshd on loopback (keys generated into a temporary directory), one sink that listens on both a
loopback TCP port and a Unix socket, and one `ssh -N -L` carrying both forwards; then, in interleaved rounds, a
1 GiB download and a 1-byte ping-pong through each forward. Prints one JSON line per measurement and a summary.
Nothing of the tunnel runs: this measures only what choosing the socket changes in the SSH hop.

    bench/ssh-socket-floor.py [--rounds 5] [--gib 1] [--pings 2000]
"""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time

CHUNK = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve(listener):
    """Each connection sends one command byte: D + 8-byte size (send that many bytes, close), or P (echo)."""
    def handle(conn):
        with conn:
            command = conn.recv(1)
            if command == b"D":
                size = int.from_bytes(conn.recv(8, socket.MSG_WAITALL), "big")
                block = memoryview(bytes(CHUNK))
                while size > 0:
                    n = min(size, CHUNK)
                    conn.sendall(block[:n])
                    size -= n
            elif command == b"P":
                while True:
                    b = conn.recv(1)
                    if not b:
                        return
                    conn.sendall(b)

    def accept():
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def connect(port):
    deadline = time.monotonic() + 30
    while True:
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=60)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return s
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def download(port, size):
    buf = bytearray(CHUNK)
    with connect(port) as s:
        start = time.perf_counter()
        s.sendall(b"D" + size.to_bytes(8, "big"))
        got = 0
        while True:
            n = s.recv_into(buf)
            if n == 0:
                break
            got += n
        seconds = time.perf_counter() - start
    assert got == size, (got, size)
    return size * 8 / seconds / 1e9


def ping_pong(port, count):
    with connect(port) as s:
        s.sendall(b"P")
        for _ in range(200):  # warm-up
            s.sendall(b"x")
            s.recv(1)
        times = []
        for _ in range(count):
            start = time.perf_counter_ns()
            s.sendall(b"x")
            assert s.recv(1) == b"x"
            times.append((time.perf_counter_ns() - start) / 1000)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--gib", type=float, default=1)
    ap.add_argument("--pings", type=int, default=2000)
    args = ap.parse_args()
    size = int(args.gib * (1 << 30))
    work = tempfile.mkdtemp(prefix="ptun-sshfloor")
    os.chmod(work, 0o700)
    procs = []
    try:
        for key in ("host", "user"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", f"{work}/{key}"], check=True)
        shutil.copy(f"{work}/user.pub", f"{work}/authorized_keys")
        os.makedirs("/run/sshd", exist_ok=True)
        sshd_port = free_port()
        with open(f"{work}/sshd_config", "w") as f:
            f.write(f"Port {sshd_port}\nListenAddress 127.0.0.1\nHostKey {work}/host\nPidFile {work}/sshd.pid\n"
                    f"AuthorizedKeysFile {work}/authorized_keys\nUsePAM no\nStrictModes no\n"
                    "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                    "AllowTcpForwarding local\nX11Forwarding no\nLogLevel ERROR\n")
        procs.append(subprocess.Popen(["/usr/sbin/sshd", "-D", "-e", "-f", f"{work}/sshd_config"]))

        tcp = socket.socket()
        tcp.bind(("127.0.0.1", 0))
        tcp.listen(16)
        sock_path = f"{work}/sink.sock"
        unix = socket.socket(socket.AF_UNIX)
        unix.bind(sock_path)
        os.chmod(sock_path, 0o600)
        unix.listen(16)
        serve(tcp)
        serve(unix)

        tcp_local, unix_local = free_port(), free_port()
        procs.append(subprocess.Popen([
            "ssh", "-N", "-F", "/dev/null", "-i", f"{work}/user", "-p", str(sshd_port), "-o", "IdentitiesOnly=yes",
            "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=accept-new",
            "-o", f"UserKnownHostsFile={work}/known_hosts", "-o", "ExitOnForwardFailure=yes",
            "-L", f"127.0.0.1:{tcp_local}:127.0.0.1:{tcp.getsockname()[1]}",
            "-L", f"127.0.0.1:{unix_local}:{sock_path}",
            f"{os.environ.get('USER', 'root')}@127.0.0.1"]))

        forwards = {"tcp": tcp_local, "unix": unix_local}
        results = {name: {"gbit": [], "rtt_us": []} for name in forwards}
        for r in range(args.rounds):
            order = ["tcp", "unix"] if r % 2 == 0 else ["unix", "tcp"]
            for name in order:
                gbit = download(forwards[name], size)
                rtt = ping_pong(forwards[name], args.pings)
                results[name]["gbit"].append(gbit)
                results[name]["rtt_us"].append(rtt)
                print(json.dumps({"round": r + 1, "forward": name, "download_gbit_s": round(gbit, 3),
                                  "ping_pong_p50_us": round(rtt, 1)}), flush=True)
        print(json.dumps({"summary": {name: {
            "download_gbit_s_median": round(statistics.median(v["gbit"]), 3),
            "download_gbit_s_range": [round(min(v["gbit"]), 3), round(max(v["gbit"]), 3)],
            "ping_pong_p50_us_median": round(statistics.median(v["rtt_us"]), 1),
            "ping_pong_p50_us_range": [round(min(v["rtt_us"]), 1), round(max(v["rtt_us"]), 1)]}
            for name, v in results.items()}, "load_average": os.getloadavg()}))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
